package api_test

import (
	"net/url"
	"strings"
	"testing"
)

// rewrites is the query string of phrasings rs.
func rewrites(rs ...string) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("&rewrite=" + url.QueryEscape(r))
	}
	return b.String()
}

// TestSearchRewritesAreBoundedAndStrict: a caller's phrasings go with q, at most four,
// each 1 to 256 bytes; anything else is a 400 with a stable code, never a search.
func TestSearchRewritesAreBoundedAndStrict(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{calibrated: true})
	for _, c := range []struct {
		name, query, code string
	}{
		{"five rewrites", "?q=weather" + rewrites("a", "b", "c", "d", "e"), "invalid_parameter"},
		{"a rewrite without q", "?category=weather" + rewrites("forecast"), "invalid_parameter"},
		{"an empty rewrite", "?q=weather&rewrite=%20", "invalid_parameter"},
		{"a rewrite too long", "?q=weather" + rewrites(strings.Repeat("é", 129)), "query_too_long"},
		{"a rewrite not UTF-8", "?q=weather&rewrite=%ff", "invalid_parameter"},
	} {
		if p := e.get(services+c.query).problem(t, 400, c.code); p.Parameter != "rewrite" {
			t.Errorf("%s: the problem names %q, not rewrite", c.name, p.Parameter)
		}
	}
	// Four, repeated as the parameter is, answer; the band says how many it read.
	r := e.get(services + "?q=" + url.QueryEscape("weather forecast for a city") + rewrites("weather forecast", "city forecast API", "weather", "weather forecast"))
	if r.StatusCode != 200 {
		t.Fatalf("four rewrites: %d %s", r.StatusCode, r.body)
	}
	var b struct {
		Band struct {
			Phrasings, Agreed, Needed int
		} `json:"band"`
		Items []struct {
			Similarity float64 `json:"similarity"`
			RankScore  float64 `json:"rank_score"`
		} `json:"items"`
	}
	r.json(t, &b)
	// A repeated phrasing is read once.
	if b.Band.Phrasings != 4 || b.Band.Needed != 2 {
		t.Errorf("band %+v, want 4 phrasings read, 2 needed", b.Band)
	}
	for i := 1; i < len(b.Items); i++ {
		if b.Items[i].RankScore > b.Items[i-1].RankScore {
			t.Errorf("items not in rank_score order: %+v", b.Items)
		}
	}
}

// TestSearchRewritesAreChargedEachNovelOne: every phrasing that costs a new embedding
// takes one more search from the caller's bucket and one more from the allowance, so
// that phrasings buy no free embeddings; cached ones cost the bucket nothing more.
func TestSearchRewritesAreChargedEachNovelOne(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{calibrated: true, perMin: 1, burst: 3, allowance: 100})
	e.get(services+"?q=ocean+tides"+rewrites("tide tables", "sea level", "tide API")).problem(t, 429, "rate_limited")

	e = newSearchEnv(t, searchOptions{calibrated: true, perMin: 1, burst: 4, allowance: 100})
	q := "?q=ocean+tides" + rewrites("tide tables", "sea level", "tide API")
	if r := e.get(services + q); r.StatusCode != 200 {
		t.Fatalf("q and three rewrites within a bucket of four: %d %s", r.StatusCode, r.body)
	}
	if used := e.allowanceUsed(t); used != 4 {
		t.Errorf("allowance used %d, want 4 (q and three novel rewrites)", used)
	}
}
