package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// nearStore is a vector store that finds every method of the snapshot near every
// query, so that any query gets a full semantic answer without a database.
type nearStore struct{ slugs []string }

func (n nearStore) Nearest(_ context.Context, _ search.ModelRecord, _ []float32, k int, only []string) ([]search.Neighbour, error) {
	var out []search.Neighbour
	for _, s := range n.slugs {
		if len(out) < k && (only == nil || strings.Contains(strings.Join(only, " "), s)) {
			out = append(out, search.Neighbour{Slug: s, Similarity: 0.9 - 0.01*float64(len(out))})
		}
	}
	return out, nil
}

func (nearStore) UseAllowance(context.Context, time.Time, int, string, int) (bool, error) {
	return true, nil
}

// FuzzEveryAnswerIsJSON sends arbitrary text as the query of the search, as a filter
// of the list and as a path segment, and requires every answer, success or problem,
// to parse as JSON with the type it claims. Searches go to three bands over the same
// neighbours: one that keeps both methods, one whose margin keeps only the nearest
// and one that refuses every query, so that answers carry nearest methods too; every
// search answer must be the document's, its items the band's and its nearest the
// methods the filter allows that the band does not keep.
func FuzzEveryAnswerIsJSON(f *testing.F) {
	for _, s := range []string{"weather", "weather\a", "weather\x7f", "\v", "\x01", "\U000E0001", "\U0010FFFF",
		"\u2028", `"quoted"`, `back\slash`, "\xff\xfe", "block-height", "Weather now", "é", "<script>", ""} {
		f.Add(s)
	}
	spec := openapitest.Load(f, "openapi.json")
	builtin := embedding.Lexhash{}
	band := func(floor, margin float64) *Server {
		s := fastPathServer(f)
		engine, err := search.NewEngine(search.Config{}, nearStore{[]string{"weather-now", "block-height"}},
			&search.Model{Embedder: builtin, Record: search.ModelRecord{ID: builtin.Model(), Dimensions: builtin.Dimensions(), Floor: floor, Margin: margin}}, nil)
		if err != nil {
			f.Fatal(err)
		}
		WithSearch(&search.Service{Engine: engine, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})(s)
		return s
	}
	// How many of the neighbours (similarities 0.9 and 0.89) each band keeps.
	bands := []struct {
		srv   *Server
		keeps int
	}{{band(0.1, 1), 2}, {band(0.1, 0.005), 1}, {band(0.95, 1), 0}}
	const dir = BasePath + "/api/public/v1"
	f.Fuzz(func(t *testing.T, v string) {
		e := url.QueryEscape(v)
		for _, target := range []string{
			dir + "/services?q=" + e, dir + "/services?q=" + e + "&category=weather", dir + "/services?q=" + e + "&limit=1",
			dir + "/services?category=" + e, dir + "/services?limit=" + e, dir + "/services?" + e, dir + "/services/" + url.PathEscape(v),
			dir + "/merchants/" + url.PathEscape(v), dir + "/" + url.PathEscape(v),
		} {
			for _, b := range bands {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				var err error
				r.URL, err = url.Parse(target)
				if err != nil {
					continue
				}
				r.RequestURI = target
				rec := httptest.NewRecorder()
				b.srv.ServeHTTP(rec, r)
				ct := rec.Header().Get("Content-Type")
				if !strings.HasPrefix(ct, "application/json") && ct != "application/problem+json" {
					t.Fatalf("%s: %d with Content-Type %q", target, rec.Code, ct)
				}
				var doc map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
					t.Fatalf("%s: %d is not JSON (%v): %.300q", target, rec.Code, err, rec.Body.Bytes())
				}
				if rec.Code == http.StatusOK && strings.Contains(target, "q=") && doc["object"] != "search" {
					t.Fatalf("%s: a search answered %v", target, doc["object"])
				}
				if rec.Code != http.StatusOK || doc["object"] != "search" {
					continue
				}
				checkSearchAnswer(t, spec, target, rec.Body.Bytes(), b.keeps)
			}
			if t.Failed() {
				return
			}
		}
	})
}

// nearestAnswer is what FuzzEveryAnswerIsJSON reads of a search answer.
type nearestAnswer struct {
	Match string
	Band  *struct{ Confidence float64 }
	Items []struct{ Slug string }
	// Nearest holds the methods near the query that are not matches.
	Nearest []struct {
		Slug      string
		NotAMatch *struct{ Reason string } `json:"not_a_match"`
	}
}

// checkSearchAnswer requires a search answer to be the document's Search, with no
// nearest on an exact match; an embedded query's (one with a band) items are the
// first keeps methods the filter allows, up to the limit, and its nearest the others
// up to the limit, each saying why it is no match.
func checkSearchAnswer(t *testing.T, spec *openapitest.Doc, target string, body []byte, keeps int) {
	t.Helper()
	if err := spec.ValidateSchema("Search", body); err != nil {
		t.Fatalf("%s: not the document's Search: %v\n%s", target, err, body)
	}
	var a nearestAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if a.Band == nil {
		if a.Nearest != nil {
			t.Fatalf("%s: nearest on a %s match: %s", target, a.Match, body)
		}
		return
	}
	allowed := 2 // both methods of the snapshot
	if strings.Contains(target, "&category=weather") || strings.Contains(target, "&limit=1") {
		allowed = 1
	}
	items := min(keeps, allowed)
	if len(a.Items) != items || len(a.Nearest) != allowed-items {
		t.Fatalf("%s: %d items and %d nearest, want %d and %d: %s", target, len(a.Items), len(a.Nearest), items, allowed-items, body)
	}
	reason := search.ReasonOutsideMargin
	if items == 0 {
		reason = search.ReasonBelowConfidence
	}
	for _, n := range a.Nearest {
		if n.NotAMatch == nil || n.NotAMatch.Reason != reason || slices.ContainsFunc(a.Items, func(it struct{ Slug string }) bool { return it.Slug == n.Slug }) {
			t.Fatalf("%s: nearest %s: %s", target, n.Slug, body)
		}
	}
}

// TestProblemInstanceIsTheEscapedPath: instance is a URI reference, so the path goes
// in as the client sent it, escaped, never decoded.
func TestProblemInstanceIsTheEscapedPath(t *testing.T) {
	t.Parallel()
	s := fastPathServer(t)
	for _, target := range []string{
		BasePath + "/api/public/v1/services/BAD%20SLUG",
		BasePath + "/api/public/v1/merchants/bad%22host%3Cx%3E",
		BasePath + "/no%20such/route",
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		var p struct{ Instance string }
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Instance != target {
			t.Errorf("%s: %d, instance %q (%v)", target, rec.Code, p.Instance, err)
		}
	}
}
