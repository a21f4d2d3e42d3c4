package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

func TestCalibrateDump(t *testing.T) {
	out := os.Getenv("WAYSTATION_CALIBRATE")
	if out == "" {
		t.Skip()
	}
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(t)
	enc, err := sentence.Load(os.Getenv("WAYSTATION_SENTENCE_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	h := embedding.NewHybrid(enc)
	rec, err := store.RegisterModel(ctx, search.ModelRecord{ID: h.Model(), Dimensions: h.Dimensions()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := search.Sync(ctx, store, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("embedded %d methods in %v", n, time.Since(start))
	texts := map[string]string{}
	urls := map[string]string{}
	mt, _ := store.MethodTexts(ctx, h.Model())
	_ = mt
	rows, _ := store.Pool().Query(ctx, `SELECT m.slug, m.endpoint_url, m.name || ' ' || p.name || ' ' || m.description || ' ' || m.category || ' ' || m.endpoint_url FROM provider_methods m JOIN providers p ON p.id = m.provider_id`)
	for rows.Next() {
		var s, u, tx string
		rows.Scan(&s, &u, &tx)
		texts[s], urls[s] = tx, u
	}
	rows.Close()
	f, _ := os.Create(out)
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	type nb struct {
		URL           string
		Fused, Sem, Lex, Cov float64
	}
	emit := func(set, kind, q string, relevant []string) {
		norm := embedding.NormalizeQuery(q)
		vs, _ := h.Embed(ctx, []string{norm})
		near, err := store.Nearest(ctx, rec, vs[0], 30, nil)
		if err != nil {
			t.Fatal(err)
		}
		var list []nb
		for _, n := range near {
			s, l := h.Parts(vs[0], n.Vector)
			list = append(list, nb{urls[n.Slug], n.Similarity, s, l, embedding.Coverage(norm, texts[n.Slug])})
		}
		b, _ := json.Marshal(map[string]any{"set": set, "kind": kind, "query": q, "relevant": relevant, "near": list})
		w.Write(append(b, '\n'))
	}
	dev, _ := os.Open("../../../../shared/eval/dev-queries.jsonl")
	sc := bufio.NewScanner(dev)
	for sc.Scan() {
		var d struct {
			Query, Kind string
			Relevant    []string
		}
		json.Unmarshal(sc.Bytes(), &d)
		emit("dev", d.Kind, d.Query, d.Relevant)
	}
	for _, l := range readQueries(t) {
		kind := "own"
		if len(l.accept) == 0 {
			kind = "offtopic"
		}
		emit("own", kind, l.query, l.accept)
	}
}
