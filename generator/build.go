// Package generator builds the directory snapshot from the store: trust is computed,
// every response body is encoded once, and the result is swapped in whole.
package generator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/parallel"
	"github.com/waystation/waystation/internal/trust"
)

// Build reads the records and makes the snapshot as of now. payer is what the service
// can pay with; nil means no payer, and then no method is payable.
func Build(ctx context.Context, src trust.RecordStore, now time.Time, payer trust.Payer) (*directory.Snapshot, error) {
	return BuildAfter(ctx, nil, src, now, payer)
}

// BuildAfter is Build for the snapshot that follows prev (nil for none): what is
// unchanged since prev is not encoded again (see directory.NewSnapshotAfter).
func BuildAfter(ctx context.Context, prev *directory.Snapshot, src trust.RecordStore, now time.Time, payer trust.Payer) (*directory.Snapshot, error) {
	return build(ctx, prev, src, now, payer, directory.NewSnapshotAfter)
}

// newSnapshot is how a build makes its snapshot from the methods and merchants.
type newSnapshot func(prev *directory.Snapshot, at time.Time, methods []directory.Method, merchants []directory.Merchant) (*directory.Snapshot, error)

func build(ctx context.Context, prev *directory.Snapshot, src trust.RecordStore, now time.Time, payer trust.Payer, newSnap newSnapshot) (*directory.Snapshot, error) {
	now = now.UTC().Truncate(time.Second)
	rec, err := src.DirectoryRecords(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	return assemble(rec, now, payer, prev, newSnap)
}

// Assemble computes every method's trust block, payability and stats and every
// merchant record, and builds the snapshot. A method is payable only when its newest
// offer follows x402 and payer pays in its network and asset (see trust.Payable).
func Assemble(rec trust.Records, now time.Time, payer trust.Payer) (*directory.Snapshot, error) {
	return assemble(rec, now, payer, nil, directory.NewSnapshotAfter)
}

// assemble is Assemble for the snapshot that follows prev (nil for none), made by newSnap.
func assemble(rec trust.Records, now time.Time, payer trust.Payer, prev *directory.Snapshot, newSnap newSnapshot) (*directory.Snapshot, error) {
	reports := make(map[string]*directory.Reports, len(rec.Reports))
	for host, rs := range rec.Reports {
		reports[host] = trust.Tally(rs, now)
	}
	// Scored on every processor: a method's trust is its own.
	methods := make([]directory.Method, len(rec.Methods))
	parallel.Each(len(rec.Methods), func(i int) {
		r := &rec.Methods[i]
		m := &methods[i]
		*m = r.Method
		pay := rec.Payments[m.Hostname]
		probes := rec.Probes[r.ID]
		m.Trust = trust.Score(trust.Input{
			Kind:      m.Kind,
			Probes:    probes,
			Override:  rec.Overrides[m.Hostname],
			Settled:   pay.Settled,
			Delivered: pay.Delivered,
			Owner:     trust.OwnerOf(*r, probes),
			Now:       now,
			Reports:   reports[m.Hostname],
		})
		// The seller's own demand goes with each of its methods, where search reads
		// it to break ties (directory.Method.Use); the score never counts it.
		m.Trust.Demand = rec.Demand[m.Hostname]
		m.Stats = directory.NewStats(pay.Settled, pay.Delivered)
		m.Payable = trust.Payable(m.Kind, probes, payer)
	})
	byHost := map[string][]int{}
	for i := range methods {
		byHost[methods[i].Hostname] = append(byHost[methods[i].Hostname], i)
	}

	merchants := make([]directory.Merchant, 0, len(byHost))
	for host, idx := range byHost {
		mr := directory.Merchant{Hostname: host, Methods: []directory.MerchantEntry{}, Probes: []directory.ProbeRecord{}}
		trusts := make([]directory.Trust, 0, len(idx))
		var demand directory.Demand
		for _, i := range idx {
			m := &methods[i]
			if !slices.Contains(mr.Providers, m.Provider) {
				mr.Providers = append(mr.Providers, m.Provider)
			}
			mr.Methods = append(mr.Methods, directory.MerchantEntry{Slug: m.Slug, Name: m.Name, Category: m.Category,
				Payable: m.Payable, NotYetProbed: m.Trust.NotYetProbed})
			trusts = append(trusts, m.Trust)
			demand.Add(m)
		}
		if demand.Methods > 0 {
			mr.ListingDemand = &demand
		}
		slices.Sort(mr.Providers)
		slices.SortFunc(mr.Methods, func(a, b directory.MerchantEntry) int { return strings.Compare(a.Slug, b.Slug) })
		pay := rec.Payments[host]
		mr.Trust = trust.Merchant(trusts, rec.Overrides[host], now)
		mr.Trust.Reports, mr.Trust.Demand = reports[host], rec.Demand[host]
		mr.Stats = directory.NewStats(pay.Settled, pay.Delivered)
		for _, o := range rec.HostProbes[host] {
			mr.Probes = append(mr.Probes, trust.ProbeRecord(o))
		}
		mr.Origin = ownOrigin(rec.Origins[host], rec.Methods, idx)
		merchants = append(merchants, mr)
	}
	flagLookalikes(rec.Listed, methods, merchants, byHost)
	return newSnap(prev, now, methods, merchants)
}
