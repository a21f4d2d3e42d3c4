package search

import (
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// TestTheMainVerbIsReadPastARequestsFrame: the verb a request opens with, once "can
// you", "i want to" or "help me" is cut off; none for a question about something.
func TestTheMainVerbIsReadPastARequestsFrame(t *testing.T) {
	for query, want := range map[string]string{
		"book a train ticket to lyon":               "book",
		"can you book a train ticket":               "book",
		"i want to swap 1 eth into usdc":            "swap",
		"please help me renew my tls certificate":   "renew",
		"how do i register a domain?":               "register",
		"what is the price of eth":                  "",
		"is it raining in chicago":                  "",
		"floor price of an nft collection":          "floor",
		"send, now: a message":                      "send",
		"":                                          "",
		"help me":                                   "help",
		"i'd like to place a limit buy order, okay": "place",
	} {
		if got := mainVerb(embedding.NormalizeQuery(query)); got != want {
			t.Errorf("%q: main verb %q, want %q", query, got, want)
		}
	}
	if act("bookings") != act("reserve") || act("book") < 0 || act("price") >= 0 || act("") >= 0 {
		t.Error("act: the forms of one act are not one group, or a lookup is an act")
	}
	if len(actGroups) > 64 {
		t.Errorf("%d acts: a method holds them in 64 bits", len(actGroups))
	}
}

// TestTheActEvidence: a request for an act reads act; act_unheld when the nearest
// method does not name it (in any of its forms), act_unheld3 when none of the three
// does, act_get when the nearest is called with GET; verb_held when the nearest
// holds the main verb's concept, for a lookup's verb as for an act's. A question
// about something reads none of them.
func TestTheActEvidence(t *testing.T) {
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	method := func(slug, name, description, verb string) directory.Method {
		return directory.Method{Slug: slug, Name: name, Description: description, Provider: "p", Hostname: "api.example",
			Category: "travel", Kind: "x402", Trust: trust, Endpoint: directory.Endpoint{Method: verb, URL: "https://api.example/" + slug}}
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), []directory.Method{
		method("flight-booking", "Flight booking", "Books a seat on a flight", "POST"),
		method("train-times", "Train times", "Timetable of trains between two stations", "GET"),
		method("hotel-search", "Hotel search", "Find hotels in a city", "GET"),
	}, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	x := newTextIndex(snap, nil, nil, nil)
	near := func(slugs ...string) []Neighbour {
		var out []Neighbour
		for i, s := range slugs {
			out = append(out, Neighbour{Slug: s, Similarity: 0.6 - 0.1*float64(i)})
		}
		return out
	}
	for _, c := range []struct {
		query string
		near  []Neighbour
		want  [5]float64 // act, act_unheld, act_unheld3, act_get, verb_held
	}{
		{"book a train ticket to lyon", near("train-times", "flight-booking", "hotel-search"), [5]float64{1, 1, 0, 1, 0}},
		{"can you reserve a train seat", near("train-times", "hotel-search"), [5]float64{1, 1, 1, 1, 0}},
		{"book a flight to lisbon", near("flight-booking", "train-times"), [5]float64{1, 0, 0, 0, 1}},
		{"find hotels in rome", near("hotel-search", "train-times"), [5]float64{0, 0, 0, 0, 1}},
		{"which trains run to lyon", near("train-times", "hotel-search"), [5]float64{}},
		{"train times to lyon", near("train-times", "hotel-search"), [5]float64{}},
	} {
		e := x.Gather(embedding.NormalizeQuery(c.query), c.near, nil)
		got := [5]float64{e[FeatAct], e[FeatActUnheld], e[FeatActUnheld3], e[FeatActGet], e[FeatVerbHeld]}
		if got != c.want {
			t.Errorf("%q: act, act_unheld, act_unheld3, act_get, verb_held %v, want %v", c.query, got, c.want)
		}
	}
}
