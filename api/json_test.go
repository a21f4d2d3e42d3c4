package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

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
// to parse as JSON with the type it claims.
func FuzzEveryAnswerIsJSON(f *testing.F) {
	for _, s := range []string{"weather", "weather\a", "weather\x7f", "\v", "\x01", "\U000E0001", "\U0010FFFF",
		"\u2028", `"quoted"`, `back\slash`, "\xff\xfe", "block-height", "é", "<script>", ""} {
		f.Add(s)
	}
	s := fastPathServer(f)
	builtin := embedding.Lexhash{}
	engine, err := search.NewEngine(search.Config{}, nearStore{[]string{"weather-now", "block-height"}},
		&search.Model{Embedder: builtin, Record: search.ModelRecord{ID: builtin.Model(), Dimensions: builtin.Dimensions(), Floor: 0.1, Margin: 1}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	WithSearch(&search.Service{Engine: engine, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})(s)
	const dir = BasePath + "/api/public/v1"
	f.Fuzz(func(t *testing.T, v string) {
		e := url.QueryEscape(v)
		for _, target := range []string{
			dir + "/services?q=" + e, dir + "/services?q=" + e + "&category=weather", dir + "/services?category=" + e,
			dir + "/services?limit=" + e, dir + "/services?" + e, dir + "/services/" + url.PathEscape(v),
			dir + "/merchants/" + url.PathEscape(v), dir + "/" + url.PathEscape(v),
		} {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.URL, err = url.Parse(target)
			if err != nil {
				continue
			}
			r.RequestURI = target
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
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
		}
	})
}

// TestProblemInstanceIsTheEscapedPath: instance is a URI reference, so the path goes
// in as the client sent it, escaped, never decoded.
func TestProblemInstanceIsTheEscapedPath(t *testing.T) {
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
