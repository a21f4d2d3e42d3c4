package web

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/search"
)

// asked is a searcher that keeps every query it is sent.
type asked struct{ queries *[]string }

func (a asked) Search(_ context.Context, _ search.Caller, _ *directory.Snapshot, q string, _ directory.Filter) (search.Answer, error) {
	*a.queries = append(*a.queries, q)
	return search.Answer{}, nil
}

// A query the screen refuses (one that holds a saved value of the key the request
// carries) is never searched, and the page neither shows it again nor says which
// value; one it lets through is searched as before.
func TestSearchPageSearchesNothingTheScreenRefuses(t *testing.T) {
	const canary = "Quartz_Canary_4417"
	var queries []string
	screen := func(r *http.Request, q string) error {
		if r.Header.Get("Authorization") == "" {
			return nil
		}
		if strings.Contains(strings.ToLower(q), strings.ToLower(canary)) {
			return problem.New(problem.ProtectedValueDetected, "It holds one of the user's protected values.")
		}
		return nil
	}
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, asked{&queries}, WithScreen(screen))
	r := get(t, srv, "/search?q=weather+at+"+canary, "Authorization", "Bearer sk_agent_x")
	b := body(t, r)
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, "holds one of your saved values") || strings.Contains(strings.ToLower(b), "canary") {
		t.Errorf("a refused query: %d\n%s", r.StatusCode, b)
	}
	if len(queries) != 0 {
		t.Fatalf("a refused query was searched: %q", queries)
	}
	if r := get(t, srv, "/search?q=weather", "Authorization", "Bearer sk_agent_x"); r.StatusCode != 200 || len(queries) != 1 {
		t.Errorf("a query the screen lets through: %d, searched %q", r.StatusCode, queries)
	}
}
