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
	"github.com/waystation/waystation/internal/trust"
)

// Build reads the records and makes the snapshot as of now.
func Build(ctx context.Context, src trust.RecordStore, now time.Time) (*directory.Snapshot, error) {
	now = now.UTC().Truncate(time.Second)
	rec, err := src.DirectoryRecords(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	return Assemble(rec, now)
}

// Assemble computes every method's trust block, payability and stats and every
// merchant record, and builds the snapshot.
func Assemble(rec trust.Records, now time.Time) (*directory.Snapshot, error) {
	methods := make([]directory.Method, 0, len(rec.Methods))
	byHost := map[string][]int{}
	for _, r := range rec.Methods {
		m := r.Method
		pay := rec.Payments[m.Hostname]
		probes := rec.Probes[r.ID]
		m.Trust = trust.Score(trust.Input{
			Kind:      m.Kind,
			Probes:    probes,
			Override:  rec.Overrides[m.Hostname],
			Settled:   pay.Settled,
			Delivered: pay.Delivered,
			Now:       now,
		})
		m.Stats = directory.NewStats(pay.Settled, pay.Delivered)
		m.Payable = payable(m.Kind, probes, r)
		byHost[m.Hostname] = append(byHost[m.Hostname], len(methods))
		methods = append(methods, m)
	}

	merchants := make([]directory.Merchant, 0, len(byHost))
	for host, idx := range byHost {
		mr := directory.Merchant{Hostname: host, Methods: []directory.MerchantEntry{}, Probes: []directory.ProbeRecord{}}
		trusts := make([]directory.Trust, 0, len(idx))
		for _, i := range idx {
			m := &methods[i]
			if !slices.Contains(mr.Providers, m.Provider) {
				mr.Providers = append(mr.Providers, m.Provider)
			}
			mr.Methods = append(mr.Methods, directory.MerchantEntry{Slug: m.Slug, Name: m.Name, Category: m.Category, Payable: m.Payable})
			trusts = append(trusts, m.Trust)
		}
		slices.Sort(mr.Providers)
		slices.SortFunc(mr.Methods, func(a, b directory.MerchantEntry) int { return strings.Compare(a.Slug, b.Slug) })
		pay := rec.Payments[host]
		mr.Trust = trust.Merchant(trusts, rec.Overrides[host], now)
		mr.Stats = directory.NewStats(pay.Settled, pay.Delivered)
		for _, o := range rec.HostProbes[host] {
			mr.Probes = append(mr.Probes, trust.ProbeRecord(o))
		}
		merchants = append(merchants, mr)
	}
	return directory.NewSnapshot(now, methods, merchants)
}

// payable follows from the kind and the newest valid offer: the last probe that got
// one, or else the first offer the seller lists.
func payable(kind string, probes []trust.Observation, r trust.MethodRecord) bool {
	for _, p := range probes {
		if p.Outcome == trust.OutcomePaymentRequired {
			return trust.Payable(kind, p.Network, p.Asset, p.Amount)
		}
	}
	for _, o := range r.Offers {
		if trust.Payable(kind, o.Network, o.Asset, o.Amount) {
			return true
		}
	}
	return false
}
