package api

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/search"
)

func TestParseServicesQueryReadsEveryFilter(t *testing.T) {
	t.Parallel()
	sq, p := parseServicesQuery("category=Blockchain,finance&verdict=proceed&kind=x402&payable=No&hostname=API.Example.&limit=5&offset=2")
	if p != nil {
		t.Fatal(p)
	}
	f := sq.Filter
	if sq.Search || strings.Join(f.Categories, ",") != "blockchain,finance" || f.Verdicts[0] != "proceed" ||
		f.Kinds[0] != "x402" || f.Payable == nil || *f.Payable || f.Hostname != "api.example" || f.Limit != 5 || f.Offset != 2 {
		t.Fatalf("%+v", sq)
	}
	sq, p = parseServicesQuery("q=+ethereum%20block+&limit=2")
	if p != nil || !sq.Search || sq.Q != "ethereum block" || sq.Filter.Limit != 2 {
		t.Fatalf("%+v %v", sq, p)
	}
}

func TestFilterKeyIgnoresValueOrder(t *testing.T) {
	t.Parallel()
	a, _ := parseServicesQuery("category=ai,data&kind=x402")
	b, _ := parseServicesQuery("kind=x402&category=data,ai")
	if a.Filter.Key() != b.Filter.Key() {
		t.Fatalf("%q != %q", a.Filter.Key(), b.Filter.Key())
	}
}

// FuzzParseServicesQuery checks that no query string panics the parser, that every
// refusal is a 400 with a known code, and that accepted queries are within bounds.
func FuzzParseServicesQuery(f *testing.F) {
	for _, s := range []string{"", "q=weather", "verified", "category=ai,data&limit=3", "q=%ff", "limit=0",
		"hostname=xn--mnzwerk-3ya.example", "payable=yes&offset=9", "a=1&a=2", "%zz=1", "q=" + strings.Repeat("é", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		sq, p := parseServicesQuery(raw)
		if p != nil {
			if problem.Status(p.Code) != 400 {
				t.Fatalf("%q: status %d", raw, problem.Status(p.Code))
			}
			if _, ok := problem.Lookup(p.Code); !ok {
				t.Fatalf("%q: unknown code %q", raw, p.Code)
			}
			return
		}
		if sq.Search && (sq.Q == "" || len(sq.Q) > search.MaxQueryBytes || !utf8.ValidString(sq.Q)) {
			t.Fatalf("%q: accepted query %q", raw, sq.Q)
		}
		if sq.Filter.Limit < 0 || sq.Filter.Offset < 0 {
			t.Fatalf("%q: negative paging", raw)
		}
		if _, err := url.ParseQuery(raw); err == nil {
			for k := range must(url.ParseQuery(raw)) {
				if strings.EqualFold(strings.TrimSpace(k), "verified") {
					t.Fatalf("%q: verified accepted", raw)
				}
			}
		}
	})
}

func must[T any](v T, _ error) T { return v }
