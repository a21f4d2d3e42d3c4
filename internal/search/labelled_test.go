package search

import (
	"strings"
	"testing"
)

func TestReadQueriesReadsTheDevelopmentSetsFormat(t *testing.T) {
	qs, err := ReadQueries(strings.NewReader(`{"id": "q1", "query": "eth gas price", "relevant": ["https://a.example/gas"], "kind": "keyword"}

{"query": "weather on Mars", "relevant": []}
{"query": "price of a token", "relevant": ["https://b.example/p"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 || qs[0].Kind != "keyword" || qs[1].Kind != KindOffTopic || qs[1].ID != "line3" || qs[2].Kind != "paraphrase" {
		t.Fatalf("%+v", qs)
	}
	for _, bad := range []string{`{"query": ""}`, `{"query": "x", "relevant": [], "kind": "task"}`,
		`{"query": "x", "relevant": ["https://a"], "kind": "offtopic"}`, `not json`} {
		if _, err := ReadQueries(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: read", bad)
		}
	}
}

func TestEndpointKeyIsRelevancePysURLIdentity(t *testing.T) {
	for _, c := range [][2]string{
		{"HTTPS://API.Example.com:443/v1/x/", "https://api.example.com/v1/x"},
		{"http://user@a.example:80/p?q=1#f", "http://a.example/p?q=1"},
		{"https://a.example:8443/", "https://a.example:8443"},
		{"https://a.example/:hash", "https://a.example/:hash"},
	} {
		if got := EndpointKey(c[0]); got != c[1] {
			t.Errorf("EndpointKey(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
