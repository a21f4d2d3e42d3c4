package trace

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// memStore keeps spans in memory, all of them visible, and remembers what it was
// asked.
type memStore struct {
	saved         []Span
	maxPerSession int
	list          []Span
	next          *Cursor
}

func (m *memStore) SaveSpans(_ context.Context, _ auth.Principal, spans []Span, maxPerSession int) (int, int, error) {
	m.saved, m.maxPerSession = append(m.saved, spans...), maxPerSession
	return len(spans), 2, nil
}

func (m *memStore) Spans(context.Context, auth.Principal, string, *Cursor, int) ([]Span, *Cursor, error) {
	return m.list, m.next, nil
}

// values is a source of protected values, or of an error.
type values struct {
	v   []string
	err error
}

func (v values) Protected(context.Context, string) ([]string, error) { return v.v, v.err }

const canary = "Quartz-Canary-4417"

func export(t *testing.T) []byte {
	t.Helper()
	d := sample()
	d.ResourceSpans[0].ScopeSpans[0].Spans[0].Name = "pay " + canary
	b, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An export's spans are kept cleaned of the user's values, under the session cap
// the service was given (its default when none), and the store's rejections are
// answered.
func TestExportKeepsSpansCleanedUnderTheSessionCap(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want int
	}{{Config{}, DefaultMaxPerSession}, {Config{MaxPerSession: 5}, 5}} {
		store := &memStore{}
		rejected, err := NewService(store, values{v: []string{canary}}, c.cfg).Export(context.Background(), auth.Principal{UserID: "u"}, export(t), Protobuf)
		if err != nil || rejected != 2 {
			t.Fatalf("export: %d %v", rejected, err)
		}
		if len(store.saved) != 1 || strings.Contains(store.saved[0].Name, canary) || store.maxPerSession != c.want {
			t.Errorf("kept %+v under cap %d, want the name cleaned and cap %d", store.saved, store.maxPerSession, c.want)
		}
	}
}

// Without the user's values nothing is kept: the export fails closed, saying so;
// a body that is no export is refused before the values are asked for.
func TestExportFailsClosedAndRefusesWhatIsNoExport(t *testing.T) {
	for name, src := range map[string]values{"no source": {}, "a failing source": {err: errors.New("down")}} {
		store := &memStore{}
		var svc *Service
		if name == "no source" {
			svc = NewService(store, nil, Config{})
		} else {
			svc = NewService(store, src, Config{})
		}
		_, err := svc.Export(context.Background(), auth.Principal{}, export(t), Protobuf)
		p, ok := problem.As(err)
		if !ok || p.Code != problem.RedactionUnavailable || p.RetryAfter != 5 || !strings.HasSuffix(p.Detail, "nothing was forwarded or stored.") || len(store.saved) != 0 {
			t.Errorf("%s: %v, kept %d", name, err, len(store.saved))
		}
	}
	store := &memStore{}
	_, err := NewService(store, nil, Config{}).Export(context.Background(), auth.Principal{}, []byte("{not otlp"), JSON)
	if code := problem.CodeOf(err); code == "" || code == problem.RedactionUnavailable || len(store.saved) != 0 {
		t.Errorf("a body that is no export: %v", err)
	}
}

// Listed spans are cleaned with the user's values of now; an empty page needs no
// values, and a page that cannot be cleaned answers no span.
func TestSpansAreCleanedOnTheWayOut(t *testing.T) {
	next := &Cursor{Start: 7, SpanID: "00f067aa0ba902b7"}
	store := &memStore{list: []Span{{Name: "pay " + canary}}, next: next}
	spans, more, err := NewService(store, values{v: []string{canary}}, Config{}).Spans(context.Background(), auth.Principal{}, "s", nil, 10)
	if err != nil || len(spans) != 1 || strings.Contains(spans[0].Name, canary) || more != next {
		t.Errorf("spans %+v %v %v", spans, more, err)
	}
	store = &memStore{list: []Span{{Name: "pay"}}}
	spans, _, err = NewService(store, values{err: errors.New("down")}, Config{}).Spans(context.Background(), auth.Principal{}, "s", nil, 10)
	if p, ok := problem.As(err); !ok || p.Code != problem.RedactionUnavailable || !strings.HasSuffix(p.Detail, "no span is answered.") || spans != nil {
		t.Errorf("with the values unavailable: %v %v", spans, err)
	}
	if spans, _, err := NewService(&memStore{}, nil, Config{}).Spans(context.Background(), auth.Principal{}, "s", nil, 10); err != nil || len(spans) != 0 {
		t.Errorf("an empty page: %v %v", spans, err)
	}
}

// A cursor's token reads back as the cursor; anything else is the parameter's
// invalid_parameter.
func TestCursorTokensReadBack(t *testing.T) {
	c := Cursor{Start: 1700000000000000001, SpanID: "00f067aa0ba902b7"}
	got, err := ParseCursor("cursor", c.Token())
	if err != nil || *got != c {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"", "!!", "WyIxIl0", (Cursor{Start: 1, SpanID: "short"}).Token(), "WyJ4IiwiMDBmMDY3YWEwYmE5MDJiNyJd"} {
		if _, err := ParseCursor("cursor", bad); problem.CodeOf(err) != problem.InvalidParameter {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
