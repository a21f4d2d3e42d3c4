package api_test

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/api/openapitest"
)

// TestHeadAnswersLikeGetOnEveryAuthenticatedRoute sends HEAD and then GET to every
// authenticated GET route, answering and failing, through a real HTTP server (which
// is what drops the body of a HEAD): the status and the headers must be the same,
// the HEAD must carry no body, and both must match the OpenAPI document.
func TestHeadAnswersLikeGetOnEveryAuthenticatedRoute(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t)
	streamed := make(chan struct{}, 1) // the HEAD of the event stream has been answered
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.ServeHTTP(w, r)
		if r.Method == http.MethodHead && r.Header.Get("Accept") == "text/event-stream" {
			streamed <- struct{}{}
		}
	}))
	defer srv.Close()
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s0")
	rid := e.raise(agentKey, sid, "r0", confirmBody)["id"].(string)
	missing := "00000000-0000-4000-8000-000000000000"

	type c struct{ path, key string }
	var cases []c
	for _, tc := range []struct{ path, key, wrongScope string }{
		{"/agent/me", agentKey, userKey},
		{"/agent/stats", agentKey, userKey},
		{"/agents", userKey, agentKey},
		{"/keys", userKey, agentKey},
		{"/sessions", agentKey, ""},
		{"/sessions/" + sid, userKey, ""},
		{"/sessions/" + sid + "/events", agentKey, ""},
		{"/sessions/" + sid + "/requests", agentKey, ""},
		{"/sessions/" + sid + "/requests/" + rid, userKey, ""},
	} {
		cases = append(cases, c{tc.path, tc.key}, c{tc.path, ""}, c{tc.path, "sk_agent_nope"})
		if tc.wrongScope != "" {
			cases = append(cases, c{tc.path, tc.wrongScope})
		}
	}
	cases = append(cases,
		c{"/sessions?limit=1", userKey},
		c{"/sessions?limit=0", userKey},
		c{"/sessions/" + missing, agentKey},
		c{"/sessions/" + sid + "/events?after=1&limit=1", agentKey},
		c{"/sessions/" + sid + "/events?wait=x", agentKey},
		c{"/sessions/" + missing + "/events", agentKey},
		c{"/sessions/" + sid + "/requests?nope=1", agentKey},
		c{"/sessions/" + sid + "/requests/" + missing, agentKey},
		c{"/sessions/" + sid + "/requests/" + rid + "?wait=0", agentKey},
	)

	send := func(method, path, key string, header ...string) (*http.Request, *http.Response, []byte) {
		t.Helper()
		req := e.request(method, path, key, "", header...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, _ := http.NewRequestWithContext(ctx, method, srv.URL+req.URL.RequestURI(), nil)
		out.Header = req.Header
		res, err := srv.Client().Do(out)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return req, res, body
	}
	for _, tc := range cases {
		hreq, head, hbody := send(http.MethodHead, tc.path, tc.key)
		_, get, _ := send(http.MethodGet, tc.path, tc.key)
		where := "HEAD " + tc.path + " (" + keyName(tc.key) + ")"
		if head.StatusCode != get.StatusCode {
			t.Errorf("%s: %d, GET %d", where, head.StatusCode, get.StatusCode)
		}
		if len(hbody) > 0 {
			t.Errorf("%s: a body of %d bytes", where, len(hbody))
		}
		if h, g := stableHeaders(head.Header), stableHeaders(get.Header); !maps.EqualFunc(h, g, slices.Equal) {
			t.Errorf("%s: headers\n%v\nGET\n%v", where, h, g)
		}
		doc.CheckResponse(t, hreq, head, hbody)
	}

	// The event stream: HEAD answers the stream's headers at once, where GET streams
	// for as long as the session is open.
	stream := []string{"Accept", "text/event-stream"}
	hreq, head, hbody := send(http.MethodHead, "/sessions/"+sid+"/events", agentKey, stream...)
	if head.StatusCode != http.StatusOK || head.Header.Get("Content-Type") != "text/event-stream" || len(hbody) > 0 {
		t.Errorf("HEAD of the event stream: %d %q, %d bytes", head.StatusCode, head.Header.Get("Content-Type"), len(hbody))
	}
	doc.CheckResponse(t, hreq, head, hbody)
	select {
	case <-streamed:
	case <-time.After(5 * time.Second):
		t.Fatal("HEAD of the event stream: the handler goes on streaming after the headers")
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+base+"/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Accept", "text/event-stream")
	get, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if h, g := stableHeaders(head.Header), stableHeaders(get.Header); !maps.EqualFunc(h, g, slices.Equal) {
		t.Errorf("HEAD of the event stream: headers\n%v\nGET\n%v", h, g)
	}
	cancel()
	get.Body.Close()

	// HEAD is a method these routes take: another one gets 405 with Allow naming it.
	for path, allow := range map[string]string{"/agent/me": "GET, HEAD", "/agents": "GET, HEAD, POST",
		"/sessions/" + sid + "/events": "GET, HEAD, POST"} {
		req, res, body := send(http.MethodPut, path, agentKey)
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != allow {
			t.Errorf("PUT %s: %d, Allow %q, want 405 and %q", path, res.StatusCode, res.Header.Get("Allow"), allow)
		}
		doc.CheckResponse(t, req, res, body)
	}
}

func keyName(key string) string {
	switch {
	case key == "":
		return "no key"
	case strings.HasPrefix(key, "sk_agent_nope"):
		return "an invalid key"
	case strings.HasPrefix(key, "sk_agent_"):
		return "an agent key"
	}
	return "a user key"
}

// stableHeaders is a response's headers less what differs between any two answers: the
// Date, and the id of a failed request, which the problem body (and so its length)
// carries too.
func stableHeaders(h http.Header) http.Header {
	h = h.Clone()
	h.Del("Date")
	if id := h.Get("X-Request-Id"); id != "" {
		h.Set("X-Request-Id", "(id)")
		if n, err := strconv.Atoi(h.Get("Content-Length")); err == nil {
			h.Set("Content-Length", strconv.Itoa(n-len(id))+" and the id")
		}
	}
	return h
}
