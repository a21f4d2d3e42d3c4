package search_test

import (
	"testing"

	"github.com/waystation/waystation/internal/search"
)

func TestBandKeepsResultsNearTheBestAboveTheFloor(t *testing.T) {
	near := []search.Neighbour{{Slug: "a", Similarity: 0.8}, {Slug: "b", Similarity: 0.7}, {Slug: "c", Similarity: 0.55}, {Slug: "d", Similarity: 0.5}}
	cases := []struct {
		floor, margin float64
		max, want     int
	}{
		{0.3, 0.2, 3, 2},  // c is more than the margin below a
		{0.3, 0.5, 3, 3},  // at most three
		{0.3, 0.5, 1, 1},  // limit narrows
		{0.75, 0.5, 3, 1}, // the floor
		{0.9, 0.5, 3, 0},  // nothing within the band
	}
	for _, c := range cases {
		if got := search.Band(near, c.floor, c.margin, c.max); len(got) != c.want {
			t.Errorf("floor %.2f margin %.2f max %d: %d results, want %d", c.floor, c.margin, c.max, len(got), c.want)
		}
	}
}

func TestConfidenceOfTheHybridReadsBothPartsAndTheLead(t *testing.T) {
	near := []search.Neighbour{
		{Slug: "a", Similarity: 0.50, Parts: true, Semantic: 0.6, Lexical: 0.3},
		{Slug: "b", Similarity: 0.42, Parts: true, Semantic: 0.5, Lexical: 0.3},
		{Slug: "c", Similarity: 0.30, Parts: true, Semantic: 0.4, Lexical: 0.1},
	}
	want := 0.55*0.6 + 0.25*0.3 + 1.0*(0.50-0.42)
	if got := search.Confidence(near); got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("confidence %.4f, want %.4f", got, want)
	}
	// The floor is on the confidence, not on each similarity: b stays though its
	// similarity is under the floor, c is beyond the margin.
	if got := search.Band(near, 0.40, 0.10, 3); len(got) != 2 {
		t.Fatalf("band kept %d, want 2", len(got))
	}
	if got := search.Band(near, want+0.01, 1, 3); len(got) != 0 {
		t.Fatalf("band under the least confidence kept %d", len(got))
	}
	// One neighbour alone has no lead.
	if got := search.Confidence(near[:1]); got > 0.55*0.6+0.25*0.3+1e-9 {
		t.Fatalf("a lone neighbour's confidence %.4f counts a lead", got)
	}
	r := search.Report(near, search.ModelRecord{Floor: 0.41, Margin: 0.1})
	if !r.Parts || r.Semantic != 0.6 || r.Lexical != 0.3 || r.Least != 0.41 || r.Gap < 0.079 {
		t.Fatalf("report %+v", r)
	}
}
