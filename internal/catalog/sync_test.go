package catalog

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// discoveryServer answers GET /discovery/resources as a facilitator does: items of
// its listing by limit and offset, with pagination.
type discoveryServer struct {
	mu       sync.Mutex
	items    []string
	maxLimit int // the most items a page holds, whatever the limit asked
	failAt   int // the offset answered with a 502; -1 for none
	hideAll  bool
	requests []*http.Request
}

func (d *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, r)
	if r.URL.Path != "/discovery/resources" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	limit, offset := 20, 0
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	if v := q.Get("offset"); v != "" {
		offset, _ = strconv.Atoi(v)
	}
	if offset == d.failAt {
		http.Error(w, "upstream trouble", http.StatusBadGateway)
		return
	}
	limit = min(limit, d.maxLimit)
	end := min(offset+limit, len(d.items))
	page := []string{}
	if offset < len(d.items) {
		page = d.items[offset:end]
	}
	pagination := fmt.Sprintf(`{"limit":%d,"offset":%d,"total":%d}`, limit, offset, len(d.items))
	if d.hideAll {
		pagination = `{}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"x402Version":2,"items":[%s],"pagination":%s}`, strings.Join(page, ","), pagination)
}

func newDiscovery(t *testing.T, n int) (*discoveryServer, string) {
	t.Helper()
	d := &discoveryServer{maxLimit: 1000, failAt: -1}
	for i := range n {
		d.items = append(d.items, fmt.Sprintf(`{"resource":"https://s%d.example/v1/thing","type":"http","x402Version":2,"description":"Thing number %d","lastUpdated":"2026-08-01T00:00:00Z","accepts":[]}`, i, i))
	}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv.URL + "/discovery/resources"
}

func TestSyncReadsEveryPage(t *testing.T) {
	d, endpoint := newDiscovery(t, 7)
	res, err := (&BazaarSync{URL: endpoint + "?type=http", PageSize: 3}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Pages != 3 || res.Items != 7 || res.Total != 7 || len(allMethods(res.Catalog)) != 7 {
		t.Fatalf("result %+v", res)
	}
	var asked []string
	for _, r := range d.requests {
		asked = append(asked, r.URL.RawQuery)
		for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
			if r.Header.Get(h) != "" {
				t.Errorf("sent %s", h)
			}
		}
		if r.Method != http.MethodGet {
			t.Errorf("method %s", r.Method)
		}
	}
	want := []string{"limit=3&type=http", "limit=3&offset=3&type=http", "limit=3&offset=6&type=http"}
	if strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked %q, want %q", asked, want)
	}
	for _, m := range allMethods(res.Catalog) {
		checkMethod(t, m)
		if m.Source != SourceBazaar {
			t.Errorf("%s: source %q", m.SourceKey, m.Source)
		}
	}
}

func TestSyncFollowsPagesShorterThanAsked(t *testing.T) {
	d, endpoint := newDiscovery(t, 5)
	d.maxLimit = 2 // the endpoint caps pages below the size asked
	res, err := (&BazaarSync{URL: endpoint, PageSize: 100}).Run(context.Background())
	if err != nil || !res.Complete || res.Pages != 3 || len(allMethods(res.Catalog)) != 5 {
		t.Fatalf("result %+v, %v", res, err)
	}
	// Without pagination figures only an empty page ends the listing.
	d.hideAll = true
	d.requests = nil
	res, err = (&BazaarSync{URL: endpoint, PageSize: 100}).Run(context.Background())
	if err != nil || !res.Complete || res.Pages != 4 || res.Total != -1 || len(allMethods(res.Catalog)) != 5 {
		t.Fatalf("without pagination: %+v, %v", res, err)
	}
}

func TestSyncIsIncompleteWhenItStopsShort(t *testing.T) {
	_, endpoint := newDiscovery(t, 10)
	res, err := (&BazaarSync{URL: endpoint, PageSize: 3, MaxPages: 2}).Run(context.Background())
	if err != nil || res.Complete || !strings.Contains(res.Incomplete, "stopped after 2 pages") || len(allMethods(res.Catalog)) != 6 {
		t.Fatalf("capped: %+v, %v", res, err)
	}

	d, endpoint := newDiscovery(t, 0)
	res, err = (&BazaarSync{URL: endpoint}).Run(context.Background())
	if err != nil || res.Complete || !strings.Contains(res.Incomplete, "no method") {
		t.Fatalf("empty listing: %+v, %v", res, err)
	}

	// The listing grows while it is read.
	d.items = []string{`{"resource":"https://a.example/1"}`, `{"resource":"https://a.example/2"}`}
	var once sync.Once
	grow := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		once.Do(func() {
			d.mu.Lock()
			d.items = append(d.items, `{"resource":"https://a.example/3"}`)
			d.mu.Unlock()
		})
		return resp, err
	})}
	res, err = (&BazaarSync{URL: endpoint, PageSize: 1, Client: grow}).Run(context.Background())
	if err != nil || res.Complete || !strings.Contains(res.Incomplete, "total changed") {
		t.Fatalf("growing listing: %+v, %v", res, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSyncFailsOnABadPageAndKeepsWhatItRead(t *testing.T) {
	d, endpoint := newDiscovery(t, 9)
	d.failAt = 6
	res, err := (&BazaarSync{URL: endpoint, PageSize: 3}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "page 3 (offset 6): HTTP 502: upstream trouble") {
		t.Fatalf("err %v", err)
	}
	if res.Complete || res.Pages != 2 || len(allMethods(res.Catalog)) != 6 {
		t.Errorf("result %+v", res)
	}

	for name, handler := range map[string]http.HandlerFunc{
		"not a list": func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"resource":"https://a.example/1"}`) },
		"not JSON":   func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<html>`) },
		"too large": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"items":[{"resource":"https://a.example/1","description":"%s"}]}`, strings.Repeat("x", 2000))
		},
		"ignores offset": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"items":[{"resource":"https://a.example/1"},{"resource":"https://a.example/2"}]}`)
		},
		"answers another offset": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"items":[{"resource":"https://a.example/1"}],"pagination":{"offset":5}}`)
		},
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			res, err := (&BazaarSync{URL: srv.URL, PageSize: 2, MaxBody: 1000, Timeout: 200 * time.Millisecond}).Run(context.Background())
			if err == nil || res.Complete {
				t.Errorf("result %+v, err %v", res, err)
			}
			t.Log(err)
		})
	}
}

func TestSyncRefusesURLsItCannotUseSafely(t *testing.T) {
	for _, u := range []string{"ftp://a.example/x", "https://user:secret@a.example/discovery/resources", "/relative", "https://"} {
		_, err := (&BazaarSync{URL: u}).Run(context.Background())
		if err == nil {
			t.Errorf("%s: accepted", u)
		}
		if strings.Contains(fmt.Sprint(err), "secret") {
			t.Errorf("%s: error shows the password: %v", u, err)
		}
	}
	if _, err := (&BazaarSync{URL: "https://a.example/", PageSize: MaxPageSize + 1}).Run(context.Background()); err == nil {
		t.Error("page size over the maximum accepted")
	}
}

func TestSyncDoesNotFollowRedirectsToPlainHTTP(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"items":[{"resource":"https://a.example/1"}]}`)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/discovery/resources", http.StatusFound)
	}))
	defer secure.Close()
	client := secure.Client()
	client.CheckRedirect = checkRedirect
	_, err := (&BazaarSync{URL: secure.URL + "/discovery/resources", Client: client}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "https to http") {
		t.Errorf("err %v", err)
	}
}

func TestListPageReadsBothPaginationShapes(t *testing.T) {
	for raw, want := range map[string][3]int{
		`{"items":[],"pagination":{"limit":10,"offset":20,"total":35}}`: {10, 20, 35},
		`{"resources":[],"limit":5,"offset":0,"total":"8"}`:             {5, 0, 8},
		`{"items":[],"pagination":{"limit":-1,"total":1.5}}`:            {-1, -1, -1},
	} {
		it, err := decodeItem([]byte(raw))
		if err != nil || !it.isList() {
			t.Fatalf("%s: %v", raw, err)
		}
		p, err := it.listPage()
		if err != nil || [3]int{p.Limit, p.Offset, p.Total} != want {
			t.Errorf("%s: %+v, %v", raw, p, err)
		}
	}
}
