package search_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// fixedStore answers every query with the same neighbours, most similar first, as
// many as asked, among only when it is set; it records how many were asked for.
type fixedStore struct {
	near  []search.Neighbour
	asked *int
}

func (s fixedStore) Nearest(_ context.Context, _ search.ModelRecord, _ []float32, k int, only []string) ([]search.Neighbour, error) {
	*s.asked = k
	var out []search.Neighbour
	for _, n := range s.near {
		if len(out) < k && (only == nil || slices.Contains(only, n.Slug)) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (fixedStore) UseAllowance(context.Context, time.Time, int, string, int) (bool, error) {
	return true, nil
}

// nearSnapshot holds methods a to f, of the weather category but d, of finance.
func nearSnapshot(t *testing.T) *directory.Snapshot {
	t.Helper()
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	var methods []directory.Method
	for _, slug := range []string{"a", "b", "c", "d", "e", "f"} {
		category := "weather"
		if slug == "d" {
			category = "finance"
		}
		methods = append(methods, directory.Method{Slug: slug, Name: "Method " + slug, Provider: "p", Hostname: "api.example", Category: category, Kind: "x402", Trust: trust})
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

type nearWant struct {
	slug, reason string
	similarity   float64
}

// TestNearestFillsWhatTheBandLeaves: an embedded query whose band keeps fewer than
// three methods also carries the nearest others, each with why it is not a match,
// never one of the items, the filters and limit applied; items stay the band's.
func TestNearestFillsWhatTheBandLeaves(t *testing.T) {
	snap := nearSnapshot(t)
	nb := func(slug string, sim float64) search.Neighbour { return search.Neighbour{Slug: slug, Similarity: sim} }
	cases := []struct {
		name  string
		near  []search.Neighbour
		f     directory.Filter
		items []string
		want  []nearWant
	}{
		{"refused", []search.Neighbour{nb("a", 0.45), nb("b", 0.44), nb("c", 0.3), nb("d", 0.2)}, directory.Filter{},
			nil, []nearWant{{"a", search.ReasonBelowConfidence, 0.45}, {"b", search.ReasonBelowConfidence, 0.44}, {"c", search.ReasonBelowConfidence, 0.3}}},
		{"some kept", []search.Neighbour{nb("a", 0.9), nb("b", 0.85), nb("c", 0.7), nb("d", 0.6)}, directory.Filter{},
			[]string{"a", "b"}, []nearWant{{"c", search.ReasonOutsideMargin, 0.7}}},
		{"within the margin, under the floor", []search.Neighbour{nb("a", 0.55), nb("b", 0.48), nb("c", 0.3)}, directory.Filter{},
			[]string{"a"}, []nearWant{{"b", search.ReasonBelowFloor, 0.48}, {"c", search.ReasonOutsideMargin, 0.3}}},
		{"all kept", []search.Neighbour{nb("a", 0.9), nb("b", 0.89), nb("c", 0.88), nb("d", 0.87)}, directory.Filter{},
			[]string{"a", "b", "c"}, nil},
		{"limit narrows both", []search.Neighbour{nb("a", 0.45), nb("b", 0.44)}, directory.Filter{Limit: 1},
			nil, []nearWant{{"a", search.ReasonBelowConfidence, 0.45}}},
		{"limit met by the band", []search.Neighbour{nb("a", 0.9), nb("b", 0.5)}, directory.Filter{Limit: 1},
			[]string{"a"}, nil},
		// A method within the band, left out only because the band had kept enough,
		// is no "nearest": the next outside the band is.
		{"within the band but for the count", []search.Neighbour{nb("ghost", 0.9), nb("a", 0.89), nb("b", 0.5)}, directory.Filter{Limit: 1},
			nil, []nearWant{{"b", search.ReasonOutsideMargin, 0.5}}},
		{"filtered", []search.Neighbour{nb("d", 0.45), nb("a", 0.44), nb("b", 0.43), nb("c", 0.42), nb("e", 0.41)}, directory.Filter{Categories: []string{"weather"}},
			nil, []nearWant{{"a", search.ReasonBelowConfidence, 0.44}, {"b", search.ReasonBelowConfidence, 0.43}, {"c", search.ReasonBelowConfidence, 0.42}}},
		// A method the store knows and the snapshot does not (a catalog published
		// between the two) leaves its place to the next.
		{"not in the snapshot", []search.Neighbour{nb("a", 0.45), nb("ghost", 0.44), nb("b", 0.43), nb("c", 0.42)}, directory.Filter{},
			nil, []nearWant{{"a", search.ReasonBelowConfidence, 0.45}, {"b", search.ReasonBelowConfidence, 0.43}, {"c", search.ReasonBelowConfidence, 0.42}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked int
			model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.5, Margin: 0.1}}
			eng, err := search.NewEngine(search.Config{}, fixedStore{c.near, &asked}, model, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, run := range []string{"novel", "repeated"} {
				res, err := eng.Search(context.Background(), "", snap, "weather in a city", c.f)
				if err != nil {
					t.Fatal(err)
				}
				var items []string
				for _, h := range res.Hits {
					items = append(items, snap.Methods()[h.Pos].Slug)
				}
				var got []nearWant
				for _, n := range res.Nearest {
					got = append(got, nearWant{snap.Methods()[n.Pos].Slug, n.Reason, n.Similarity})
				}
				if !slices.Equal(items, c.items) || !slices.Equal(got, c.want) {
					t.Errorf("%s: items %v nearest %v, want %v and %v", run, items, got, c.items, c.want)
				}
				if res.Band == nil || len(res.Hits)+len(res.Nearest) > search.MaxResults {
					t.Errorf("%s: band %v, %d items and %d nearest", run, res.Band, len(res.Hits), len(res.Nearest))
				}
				if want := map[bool]string{true: search.MatchSemantic, false: search.MatchNone}[len(c.items) > 0]; res.Match != want {
					t.Errorf("%s: match %s, want %s", run, res.Match, want)
				}
			}
			if asked <= search.MaxResults {
				t.Errorf("the store was asked for %d neighbours: none to spare for a method not in the snapshot", asked)
			}
		})
	}
}

// TestExactMatchHasNoNearest: a query resolved by name is a match, with nothing near
// it to offer.
func TestExactMatchHasNoNearest(t *testing.T) {
	snap := nearSnapshot(t)
	var asked int
	model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.5, Margin: 0.1}}
	eng, err := search.NewEngine(search.Config{}, fixedStore{[]search.Neighbour{{Slug: "b", Similarity: 0.3}}, &asked}, model, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Search(context.Background(), "", snap, "Method A", directory.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Match != search.MatchMethod || len(res.Hits) != 1 || res.Nearest != nil || res.Band != nil || asked != 0 {
		t.Fatalf("%+v (store asked for %d)", res, asked)
	}
}

// TestNearestUnderACalibratedBand: a calibrated band has no floor on similarity (its
// least is a probability), so a method within its margin is never "below_floor", and
// one it left out only because it had kept enough is no nearest.
func TestNearestUnderACalibratedBand(t *testing.T) {
	snap := nearSnapshot(t)
	var asked int
	near := []search.Neighbour{{Slug: "ghost", Similarity: 0.9}, {Slug: "a", Similarity: 0.85}, {Slug: "b", Similarity: 0.5}}
	cal := &search.Calibration{Bias: 5, Least: 0.9, Margin: 0.1} // a probability of 0.993, whatever the evidence
	model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: cal}}
	eng, err := search.NewEngine(search.Config{}, fixedStore{near, &asked}, model, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Search(context.Background(), "", snap, "weather in a city", directory.Filter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 0 || len(res.Nearest) != 1 || snap.Methods()[res.Nearest[0].Pos].Slug != "b" || res.Nearest[0].Reason != search.ReasonOutsideMargin {
		t.Fatalf("%+v", res)
	}
}
