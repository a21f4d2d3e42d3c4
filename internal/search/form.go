package search

import (
	"strings"

	"github.com/waystation/waystation/internal/directory"
)

// questionWords open a query that asks a question rather than for an act.
var questionWords = map[string]bool{"who": true, "what": true, "what's": true, "which": true, "whose": true, "how": true,
	"where": true, "when": true, "why": true, "is": true, "are": true, "was": true, "were": true, "does": true, "do": true,
	"did": true, "can": true, "could": true, "has": true, "have": true, "will": true, "would": true, "should": true}

// asks reports whether query (normalised) asks a question, a question word first or
// a question mark last, rather than for an act.
func asks(query string) bool {
	first, _, _ := strings.Cut(query, " ")
	return questionWords[first] || strings.HasSuffix(query, "?")
}

// QueryForm returns samples with the evidence of their queries' form (FeatAsk,
// FeatFirstHeld, in every ranking) read over snap: the near misses of the labelled
// queries mostly ask the catalog to do something (register a name, place an order,
// send a message) where its methods look things up, so a request for an act whose
// verb the nearest method does not hold is likelier one. samples are left as they
// are.
func (e *Engine) QueryForm(snap *directory.Snapshot, samples []Labelled) []Labelled {
	return e.textIndex(snap).queryForm(samples)
}

func (x *textIndex) queryForm(samples []Labelled) []Labelled {
	out := make([]Labelled, len(samples))
	for i, s := range samples {
		ask := 0.0
		if asks(s.Query) {
			ask = 1
		}
		q := x.queryConcepts(s.Query)
		set := func(e *Evidence, slugs []string) {
			e[FeatAsk], e[FeatFirstHeld] = ask, 0
			if len(q.ids) > 0 && len(slugs) > 0 && x.holds(x.position(slugs[0]), q.ids[0], q.known[0]) {
				e[FeatFirstHeld] = 1
			}
		}
		s.Rankings = append([]Ranking(nil), s.Rankings...)
		for k := range s.Rankings {
			set(&s.Rankings[k].Evidence, s.Rankings[k].Slugs)
		}
		set(&s.Evidence, s.Slugs)
		out[i] = s
	}
	return out
}
