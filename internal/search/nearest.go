package search

import "github.com/waystation/waystation/internal/directory"

// Why a method near the query is not a match, as a Near tells it.
const (
	// ReasonBelowConfidence: the band refused the query, since its confidence that
	// the nearest method answers it is under the least the model accepts.
	ReasonBelowConfidence = "below_confidence"
	// ReasonOutsideMargin: the band kept methods, and this one's similarity falls
	// further below the best one's than the margin.
	ReasonOutsideMargin = "outside_margin"
	// ReasonBelowFloor: under a model of one part, the band kept methods, and this
	// one's similarity is within the margin but under the model's floor.
	ReasonBelowFloor = "below_floor"
)

// Reasons lists every reason a Near can give.
var Reasons = []string{ReasonBelowConfidence, ReasonOutsideMargin, ReasonBelowFloor}

// fetched is how many neighbours a query's vector search asks the store for: the
// most the band keeps, and two more, so that the nearest methods outside the band
// still fill the answer when a neighbour the store knows is not in the snapshot
// searched (a catalog published between the two); and as many as the calibrated band
// reranks.
const fetched = max(MaxResults+2, Neighbours, Reranked)

// Near is a method near the query that the band did not keep, and why: an answer
// that keeps fewer methods than it may carries the nearest others, so that a caller
// left with no match still sees where the catalog comes closest.
type Near struct {
	Hit
	Reason string
}

// outside returns the neighbours in near, most similar first, that the band did not
// keep and that are in snap and pass f, each with its reason, at most n of them. A
// neighbour the band left out only because it had kept enough is not outside it, and
// is skipped.
func outside(near, kept []Neighbour, r BandReport, snap *directory.Snapshot, f directory.Filter, n int) []Near {
	if n <= 0 || len(near) == 0 {
		return nil
	}
	var out []Near
	for _, nb := range near {
		if len(out) == n {
			break
		}
		reason := whyNot(nb, near[0].Similarity, len(kept), r)
		if reason == "" || holds(kept, nb.Slug) {
			continue
		}
		if p, ok := snap.Position(nb.Slug); ok && snap.Allows(f, p) {
			out = append(out, Near{Hit: Hit{Pos: p, Similarity: nb.Similarity}, Reason: reason})
		}
	}
	return out
}

// whyNot says why the band, which kept kept methods and whose nearest method has
// similarity best, does not keep nb; "" when nb is within the band.
func whyNot(nb Neighbour, best float64, kept int, r BandReport) string {
	switch {
	case kept == 0:
		return ReasonBelowConfidence
	case nb.Similarity < best-r.Margin:
		return ReasonOutsideMargin
	case !r.Calibrated && !nb.Parts && nb.Similarity < r.Least:
		return ReasonBelowFloor
	}
	return ""
}

func holds(ns []Neighbour, slug string) bool {
	for _, n := range ns {
		if n.Slug == slug {
			return true
		}
	}
	return false
}
