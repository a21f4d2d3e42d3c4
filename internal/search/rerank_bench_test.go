package search

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

// BenchmarkRerankAndGather15k measures what a calibrated band adds to a novel query
// in memory at the Bazaar's scale: reranking the nearest forty by the query's
// concepts and reading the evidence of the first ten (the snapshot's word index built
// beforehand, once per snapshot); with WordNet's files (WAYSTATION_WORDNET, as make
// bench sets it), once more counting their relatives.
func BenchmarkRerankAndGather15k(b *testing.B) {
	b.Run("exact", func(b *testing.B) { benchmarkRerankAndGather(b, nil, nil) })
	b.Run("exact-act", func(b *testing.B) { benchmarkRerankAndGather(b, nil, nil, benchAct) })
	if dir := os.Getenv("WAYSTATION_WORDNET"); dir != "" {
		th, err := LoadThesaurus(dir)
		if err != nil {
			b.Fatal(err)
		}
		th.Weight = 0.5
		b.Run("wordnet", func(b *testing.B) { benchmarkRerankAndGather(b, th, nil) })
	}
	if dir := os.Getenv("WAYSTATION_WORDVEC"); dir != "" {
		v, err := LoadWordVectors(dir, WordVectorRanks)
		if err != nil {
			b.Fatal(err)
		}
		v.Threshold, v.Weight = 0.3, 0.5
		b.Run("wordvec", func(b *testing.B) { benchmarkRerankAndGather(b, nil, v) })
	}
}

// BenchmarkLoadWordVectors measures reading the word vectors (WAYSTATION_WORDVEC), as
// a server given them would when it starts, and the heap they hold then.
func BenchmarkLoadWordVectors(b *testing.B) {
	dir := os.Getenv("WAYSTATION_WORDVEC")
	if dir == "" {
		b.Skip("WAYSTATION_WORDVEC names no word vectors")
	}
	var before, after runtime.MemStats
	var v *WordVectors
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		var err error
		if v, err = LoadWordVectors(dir, WordVectorRanks); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "held-MB")
	b.ReportMetric(float64(v.Words()), "words")
	runtime.KeepAlive(v)
}

// BenchmarkLoadThesaurus measures reading WordNet's files (WAYSTATION_WORDNET) into a
// thesaurus, as the server does when it starts, and the heap it holds then.
func BenchmarkLoadThesaurus(b *testing.B) {
	dir := os.Getenv("WAYSTATION_WORDNET")
	if dir == "" {
		b.Skip("WAYSTATION_WORDNET names no WordNet files")
	}
	var before, after runtime.MemStats
	var th *Thesaurus
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		var err error
		if th, err = LoadThesaurus(dir); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "held-MB")
	b.ReportMetric(float64(th.Lemmas()), "lemmas")
	runtime.KeepAlive(th)
}

// benchAct is a request for an act, whose main verb the evidence reads (act_*).
const benchAct = "can you book a hotel by the harbour and send me the weather forecast"

// benchmarkRerankAndGather measures one query (a question, unless one is given).
func benchmarkRerankAndGather(b *testing.B, th *Thesaurus, v *WordVectors, other ...string) {
	words := []string{"weather", "forecast", "token", "price", "wallet", "balance", "image", "generate", "summary", "news",
		"flight", "hotel", "stock", "quote", "email", "verify", "domain", "whois", "tide", "harbour", "sports", "score"}
	var plain []string
	if v != nil {
		// Words the vectors hold, 20,000 of them, so that the catalog has a vocabulary
		// of the size of the Bazaar's for the query's words to be compared with.
		for w := range v.index {
			if plain = append(plain, w); len(plain) == 20_000 {
				break
			}
		}
	}
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	var methods []directory.Method
	for i := range 15_000 {
		desc := ""
		for j := range 12 {
			desc += words[(i*7+j*3)%len(words)] + fmt.Sprint(i%300) + " "
		}
		if len(plain) > 0 {
			for j := range 4 {
				desc += plain[(i*4+j)%len(plain)] + " "
			}
		}
		methods = append(methods, directory.Method{Slug: fmt.Sprintf("m%05d", i), Name: fmt.Sprintf("Method %d", i), Description: desc,
			Provider: "p", Hostname: "api.example", Category: "misc", Kind: "x402", Trust: trust})
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	x := newTextIndex(snap, th, v, nil)
	indexed := time.Since(start)
	near := make([]Neighbour, Reranked)
	for i := range near {
		near[i] = Neighbour{Slug: methods[i*97].Slug, Similarity: 0.6 - float64(i)*0.01, Semantic: 0.5, Lexical: 0.3, Parts: true}
	}
	query := "when is high tide in the harbour and what is the weather forecast"
	if len(other) > 0 {
		query = other[0]
	}
	b.ReportAllocs()
	for b.Loop() {
		ranked := x.Rerank(query, near, 0.5)
		_ = x.Gather(query, ranked, nil)
	}
	b.ReportMetric(float64(indexed.Microseconds())/1000, "index-ms")
}
