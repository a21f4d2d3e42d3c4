package search

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// Query is one labelled query, in the format of the development set: the query, the
// endpoint URLs of the methods that do what it asks (none for an off-topic query),
// and its kind (paraphrase, task, keyword or offtopic).
type Query struct {
	ID       string   `json:"id"`
	Text     string   `json:"query"`
	Relevant []string `json:"relevant"`
	Kind     string   `json:"kind"`
}

// KindOffTopic is the kind of a query no method answers.
const KindOffTopic = "offtopic"

// ReadQueries reads labelled queries, one JSON object a line; a query without a kind
// is a paraphrase, or off-topic when nothing is relevant.
func ReadQueries(r io.Reader) ([]Query, error) {
	var out []Query
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var q Query
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			return nil, fmt.Errorf("search: labelled queries, line %d: %w", n, err)
		}
		if strings.TrimSpace(q.Text) == "" {
			return nil, fmt.Errorf("search: labelled queries, line %d: no query", n)
		}
		if q.ID == "" {
			q.ID = "line" + strconv.Itoa(n)
		}
		switch {
		case q.Kind == "" && len(q.Relevant) == 0:
			q.Kind = KindOffTopic
		case q.Kind == "":
			q.Kind = "paraphrase"
		}
		if (q.Kind == KindOffTopic) != (len(q.Relevant) == 0) {
			return nil, fmt.Errorf("search: labelled queries, line %d: an off-topic query has no relevant URL, any other has some", n)
		}
		out = append(out, q)
	}
	return out, sc.Err()
}

// Label reads q as calibration does, under model m over snap, once for each of
// RerankWeights: its nearest methods' evidence, the nearest one's category, and which
// of the nearest three the labels call relevant.
func (e *Engine) Label(ctx context.Context, snap *directory.Snapshot, m *Model, set string, q Query) (Labelled, error) {
	norm := embedding.NormalizeQuery(q.Text)
	vs, err := m.Embedder.Embed(ctx, []string{norm})
	if err != nil {
		return Labelled{}, err
	}
	near, err := e.store.Nearest(ctx, m.Record, vs[0], fetched, nil)
	if err != nil {
		return Labelled{}, err
	}
	SplitParts(m.Embedder, vs[0], near)
	l := Labelled{ID: q.ID, Set: set, Kind: q.Kind, Off: q.Kind == KindOffTopic, Query: norm, Vector: vs[0], Near: near}
	for _, u := range q.Relevant {
		l.Labels = append(l.Labels, EndpointKey(u))
	}
	return e.Relabel(snap, m, l, near), nil
}

// Relabel reads l again as Label does, over near, its nearest methods (most similar
// first) found some other way: what a change of the ranking (an expansion of the
// methods' texts, say) does to the evidence and the relevant methods among the three.
func (e *Engine) Relabel(snap *directory.Snapshot, m *Model, l Labelled, near []Neighbour) Labelled {
	x := e.textIndex(snap)
	l.Rankings = nil
	for _, w := range RerankWeights {
		l.Rankings = append(l.Rankings, x.ranking(snap, m, l, x.Rerank(l.Query, near, w)))
	}
	return l.ranked(0)
}

// ranking is how l reads over ranked, its nearest methods in a ranking's order: the
// evidence, the nearest one's category, and which of the first three are relevant:
// a method is when it or a near-duplicate of its group is labelled.
func (x *textIndex) ranking(snap *directory.Snapshot, m *Model, l Labelled, ranked []Neighbour) Ranking {
	relevant := map[string]bool{}
	for _, k := range l.Labels {
		relevant[k] = true
	}
	r := Ranking{Evidence: x.Gather(l.Query, ranked, generalEnglish(m))}
	if len(ranked) > 0 {
		if top, ok := x.method(ranked[0].Slug); ok {
			r.Category = top.Category
		}
	}
	for _, n := range ranked[:min(len(ranked), MaxResults)] {
		url := ""
		hit := false
		if p, ok := snap.Position(n.Slug); ok {
			url = snap.Methods()[p].Endpoint.URL
			// A group of near-duplicates is one answer (Collapse): it answers the
			// query when any of its methods is labelled, whichever is its face.
			for _, q := range x.twins(p) {
				hit = hit || relevant[EndpointKey(snap.Methods()[q].Endpoint.URL)]
			}
		}
		r.Similarities = append(r.Similarities, n.Similarity)
		r.Relevant = append(r.Relevant, hit)
		r.Keys = append(r.Keys, EndpointKey(url))
		r.Slugs = append(r.Slugs, n.Slug)
	}
	return r
}

// EndpointKey is a loose identity of an endpoint URL, the one labelled query sets are
// scored by: trimmed, scheme and host lower-cased, the default port, user info,
// fragment and trailing slashes dropped; the path with its templates (":hash") and a
// non-empty query kept.
func EndpointKey(u string) string {
	u = strings.TrimSpace(u)
	scheme := ""
	if i := strings.IndexByte(u, ':'); i > 0 && strings.Trim(strings.ToLower(u[:i]), "abcdefghijklmnopqrstuvwxyz0123456789+-.") == "" {
		scheme, u = strings.ToLower(u[:i]), u[i+1:]
	}
	u, _, _ = strings.Cut(u, "#")
	u, rawQuery, _ := strings.Cut(u, "?")
	netloc := ""
	if rest, ok := strings.CutPrefix(u, "//"); ok {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			i = len(rest)
		}
		host := rest[:i]
		u = rest[i:]
		if j := strings.LastIndexByte(host, '@'); j >= 0 {
			host = host[j+1:]
		}
		port := ""
		if j := strings.LastIndexByte(host, ':'); j >= 0 && !strings.Contains(host[j:], "]") {
			host, port = host[:j], host[j+1:]
		}
		netloc = strings.ToLower(strings.Trim(host, "[]"))
		def := 443
		if scheme == "http" {
			def = 80
		}
		if p, err := strconv.Atoi(port); err == nil && p != def {
			netloc += ":" + strconv.Itoa(p)
		} else if err != nil && port != "" {
			netloc += ":" + port
		}
	}
	path := u
	if len(path) > 1 {
		path = strings.TrimRight(path, "/")
	}
	if path == "/" {
		path = ""
	}
	out := scheme + "://" + netloc + path
	if rawQuery != "" {
		out += "?" + rawQuery
	}
	return out
}
