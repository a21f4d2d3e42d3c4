package search

import (
	"fmt"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

// BenchmarkRerankAndGather15k measures what a calibrated band adds to a novel query
// in memory at the Bazaar's scale: reranking the nearest forty by the query's
// concepts and reading the evidence of the first ten (the snapshot's word index built
// beforehand, once per snapshot).
func BenchmarkRerankAndGather15k(b *testing.B) {
	words := []string{"weather", "forecast", "token", "price", "wallet", "balance", "image", "generate", "summary", "news",
		"flight", "hotel", "stock", "quote", "email", "verify", "domain", "whois", "tide", "harbour", "sports", "score"}
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	var methods []directory.Method
	for i := range 15_000 {
		desc := ""
		for j := range 12 {
			desc += words[(i*7+j*3)%len(words)] + fmt.Sprint(i%300) + " "
		}
		methods = append(methods, directory.Method{Slug: fmt.Sprintf("m%05d", i), Name: fmt.Sprintf("Method %d", i), Description: desc,
			Provider: "p", Hostname: "api.example", Category: "misc", Kind: "x402", Trust: trust})
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		b.Fatal(err)
	}
	x := newTextIndex(snap)
	near := make([]Neighbour, Reranked)
	for i := range near {
		near[i] = Neighbour{Slug: methods[i*97].Slug, Similarity: 0.6 - float64(i)*0.01, Semantic: 0.5, Lexical: 0.3, Parts: true}
	}
	query := "when is high tide in the harbour and what is the weather forecast"
	b.ReportAllocs()
	for b.Loop() {
		ranked := x.Rerank(query, near, 0.5)
		_ = x.Gather(query, ranked, nil)
	}
}
