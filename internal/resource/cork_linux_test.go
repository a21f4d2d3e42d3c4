package resource

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"syscall"
	"testing"
)

// corkProbe notes whether the connection is corked when Serve flushes the headers.
type corkProbe struct {
	http.ResponseWriter
	rc            syscall.RawConn
	corkedAtFlush bool
}

func (p *corkProbe) Flush() {
	p.corkedAtFlush = corkOf(p.rc) == 1
	p.ResponseWriter.(http.Flusher).Flush()
}

func (p *corkProbe) ReadFrom(src io.Reader) (int64, error) {
	return p.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
}

func corkOf(rc syscall.RawConn) int {
	v := -1
	rc.Control(func(fd uintptr) { v, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK) })
	return v
}

// TestFromFilesCorksTheHeadersUntilTheBody checks that, on a server with
// ConnContext, an answer sent from a file has its headers held back by TCP_CORK
// until the body follows, and that the cork is off once the answer is out (else its
// last segment would wait), with the bytes unchanged and the connection kept alive.
func TestFromFilesCorksTheHeadersUntilTheBody(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"directory","b":[1,2,3]},`), 5000)
	mem := New(JSON, body)
	res, err := mem.FromFiles(published(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var atFlush []bool
	var after []int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc, _ := r.Context().Value(connKey{}).(syscall.RawConn)
		if rc == nil {
			t.Error("no connection in the request's context")
			return
		}
		p := &corkProbe{ResponseWriter: w, rc: rc}
		Serve(p, r, res, http.StatusOK)
		mu.Lock()
		atFlush, after = append(atFlush, p.corkedAtFlush), append(after, corkOf(rc))
		mu.Unlock()
	}))
	srv.Config.ConnContext = ConnContext
	srv.Start()

	reused := 0
	for i := range 3 {
		ae := [...]string{"identity", "gzip", "br"}[i]
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Accept-Encoding", ae)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(c httptrace.GotConnInfo) {
				if c.Reused {
					reused++
				}
			},
		}))
		resp, err := srv.Client().Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := [...][]byte{mem.Body, mem.Gzip(), mem.Brotli()}[i]; err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s: %d bytes, want %d (%v)", ae, len(b), len(want), err)
		}
	}
	srv.Close() // waits for the handlers
	mu.Lock()
	defer mu.Unlock()
	for i := range atFlush {
		if !atFlush[i] || after[i] != 0 {
			t.Errorf("answer %d: corked at the headers' flush %v, TCP_CORK %d after the answer (want true, then 0)", i, atFlush[i], after[i])
		}
	}
	if len(atFlush) != 3 || reused != 2 {
		t.Errorf("%d answers, %d on a connection reused; want 3, 2", len(atFlush), reused)
	}
}

// TestHoldingAllocatesNothing checks that holding an answer's headers and releasing
// them keeps Serve free of garbage, on a Listener's connection (MSG_MORE) and on
// another (TCP_CORK).
func TestHoldingAllocatesNothing(t *testing.T) {
	for _, wrap := range []bool{true, false} {
		sc, _ := accepted(t, wrap)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r = r.WithContext(ConnContext(r.Context(), sc))
		if n := testing.AllocsPerRun(100, func() {
			h := hold(r)
			if h.sc == nil && h.rc == nil {
				t.Fatal("nothing held")
			}
			if (h.sc != nil) != wrap {
				t.Fatalf("held through MSG_MORE %v on a Listener's connection %v", h.sc != nil, wrap)
			}
			h.release()
		}); n != 0 {
			t.Errorf("Listener %v: %v allocations to hold and release", wrap, n)
		}
	}
}
