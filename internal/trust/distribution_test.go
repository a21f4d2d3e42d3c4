package trust_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

// health is a synthetic seller's behaviour over its probe history.
type health string

const (
	healthy health = "healthy" // answers every probe with its listed offer
	flaky   health = "flaky"   // every other probe times out
	down    health = "down"    // refuses every connection
	drifted health = "drifted" // changes payee and price at every probe
	stale   health = "stale"   // last probed four days ago
)

// scenarios give each hostname a behaviour. "as listed" is every seller answering
// exactly as its catalog entry says; "mixed" draws a behaviour per hostname from a
// hash of its name, in the proportions written beside it.
var scenarios = []struct {
	name string
	pick func(host string) health
}{
	{"as listed", func(string) health { return healthy }},
	{"mixed (70% healthy, 12% flaky, 10% down, 4% drifting, 4% stale)", func(host string) health {
		h := fnv.New32a()
		h.Write([]byte(host))
		switch n := h.Sum32() % 100; {
		case n < 70:
			return healthy
		case n < 82:
			return flaky
		case n < 92:
			return down
		case n < 96:
			return drifted
		}
		return stale
	}},
}

// TestVerdictDistributionOnTheRealCatalog imports the real Bazaar catalog, gives
// every method a synthetic probe history (four probes six hours apart; no network),
// and prints the verdict distribution the scorer gives under each scenario. Run it
// with -v to read the tables.
func TestVerdictDistributionOnTheRealCatalog(t *testing.T) {
	cat := pgtest.RealCatalog(t)
	for _, sc := range scenarios {
		t.Run(strings.Fields(sc.name)[0], func(t *testing.T) {
			ctx := context.Background()
			store := pgtest.New(t)
			now := time.Now().UTC().Truncate(time.Second)
			if _, err := store.LoadCatalog(ctx, cat, now); err != nil {
				t.Fatal(err)
			}
			rec, err := store.DirectoryRecords(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			// The offers each method was listed with, as the catalog stored them.
			offers := map[int64][]catalog.Offer{}
			rows, _ := store.Pool().Query(ctx, `SELECT id, offers FROM provider_methods`)
			var id int64
			var raw []byte
			if _, err := pgx.ForEachRow(rows, []any{&id, &raw}, func() error {
				var o []catalog.Offer
				err := json.Unmarshal(raw, &o)
				offers[id] = o
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var results []trust.Result
			complete := 0
			for _, m := range rec.Methods {
				h := sc.pick(m.Method.Hostname)
				target := trust.Target{MethodID: m.ID, Hostname: m.Method.Hostname, Kind: m.Method.Kind}
				offer := listedOffer(m.Method.Hostname, offers[m.ID])
				if offer != nil && h == healthy {
					complete++
				}
				for i := range 4 {
					at := now.Add(-time.Duration(i) * 6 * time.Hour)
					if h == stale {
						at = at.Add(-96 * time.Hour)
					}
					results = append(results, synthetic(target, offer, h, i, at))
				}
			}
			if err := store.RecordProbes(ctx, results); err != nil {
				t.Fatal(err)
			}
			snap, err := generator.Build(ctx, store, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			table, counts := distribution(snap)
			t.Logf("verdicts of the %d methods of %s, scenario %s:\n%s", snap.Len(), "the real catalog", sc.name, table)
			if sc.name == "as listed" {
				// Every seller answering as listed is proceed when its offer is priced in
				// a known mainnet asset, caution on a testnet or unknown asset, avoid
				// when the listing has no readable offer.
				if counts[directory.VerdictUnknown] != 0 || counts[directory.VerdictProceed] < complete*9/10 {
					t.Errorf("as listed: %v of %d complete offers", counts, complete)
				}
			}
			if total := counts[directory.VerdictProceed] + counts[directory.VerdictCaution] + counts[directory.VerdictAvoid] + counts[directory.VerdictUnknown]; total != snap.Len() {
				t.Errorf("verdicts add up to %d of %d", total, snap.Len())
			}
		})
	}
}

// listedOffer is the offer the catalog lists first, as the seller's 402 would carry
// it, or nil when the listing has no offer or no readable amount or asset (the 402 is
// then taken to be unreadable too). Most listings of the snapshot leave the payee
// out; a live 402 always names one, so a fixed payee per hostname stands in for it.
func listedOffer(host string, offers []catalog.Offer) *x402.Offer {
	for _, o := range offers {
		if o.Amount == nil || o.Asset == "" || o.Network == "" {
			continue
		}
		payTo := o.PayTo
		if payTo == "" {
			payTo = "payee-of-" + host
		}
		return &x402.Offer{Version: 2, Scheme: o.Scheme, Network: x402.NormalizeNetwork(o.Network),
			Asset: o.Asset, PayTo: payTo, Amount: *o.Amount}
	}
	return nil
}

func synthetic(t trust.Target, offer *x402.Offer, h health, i int, at time.Time) trust.Result {
	r := trust.Result{Target: t, ProbedAt: at, Latency: 150 * time.Millisecond}
	switch {
	case h == down:
		r.Outcome = trust.OutcomeConnectionRefused
	case h == flaky && i%2 == 0:
		r.Outcome = trust.OutcomeTimeout
	case offer == nil:
		r.Outcome, r.HTTPStatus = trust.OutcomeInvalidOffer, 402
	default:
		o := *offer
		if h == drifted {
			o.PayTo = fmt.Sprintf("%s-%d", o.PayTo, i)
			o.Amount = fmt.Sprint(1000 * (i + 1))
		}
		r.Outcome, r.HTTPStatus, r.Offer = trust.OutcomePaymentRequired, 402, &o
	}
	return r
}

// distribution renders the verdict counts and score bands of a snapshot's methods.
func distribution(snap *directory.Snapshot) (string, map[string]int) {
	counts := map[string]int{}
	bands := map[string]int{}
	for _, m := range snap.Methods() {
		counts[m.Trust.Verdict]++
		band := "null"
		if s := m.Trust.Score; s != nil {
			band = fmt.Sprintf("%3d-%3d", *s/10*10, min(*s/10*10+9, 100))
		}
		bands[band]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %-8s %5s %6s\n", "verdict", "count", "share")
	for _, v := range directory.Verdicts {
		fmt.Fprintf(&b, "  %-8s %5d %5.1f%%\n", v, counts[v], 100*float64(counts[v])/float64(max(snap.Len(), 1)))
	}
	keys := make([]string, 0, len(bands))
	for k := range bands {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "  score bands:")
	for _, k := range keys {
		fmt.Fprintf(&b, " [%s] %d", strings.TrimSpace(k), bands[k])
	}
	return b.String(), counts
}
