package resource

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestListenerSendsFilesAsNetDoes checks that through Listener's connections, with
// ConnContext, an answer sent from its files has the bytes and headers of the one in
// memory in every form, to many clients at once on kept-alive connections, through
// net/http's writer and through one that only writes (a middleware's), and that the
// files go back to be reused with their offsets at 0.
func TestListenerSendsFilesAsNetDoes(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"directory","b":[1,2,3]},`), 20000)
	mem := New(JSON, body)
	res, err := mem.FromFiles(published(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	var own sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(connKey{}).(*sendConn); ok {
			own.Store(r.RemoteAddr, true)
		}
		if r.URL.RawQuery == "copy" {
			w = struct{ http.ResponseWriter }{w}
		}
		Serve(w, r, res, http.StatusOK)
	}))
	srv.Listener = Listener(srv.Listener)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range 4 {
				for _, c := range formsOf(mem) {
					req, _ := http.NewRequest(http.MethodGet, srv.URL+[...]string{"", "?copy"}[i%2], nil)
					req.Header.Set("Accept-Encoding", c.ae)
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || !bytes.Equal(b, c.want) || resp.Header.Get("Etag") != c.etag ||
						resp.Header.Get("Content-Length") != strconv.Itoa(len(c.want)) {
						t.Errorf("%s: %d bytes (%v), %v", c.ae, len(b), err, resp.Header)
					}
				}
			}
		})
	}
	wg.Wait()
	conns := 0
	own.Range(func(any, any) bool { conns++; return true })
	if conns == 0 || conns > 16 {
		t.Errorf("answers sent through %d of the listener's connections, want 1 to 16 (kept alive)", conns)
	}
	for form, f := range res.files {
		if f == nil {
			continue
		}
		f.mu.Lock()
		for _, o := range f.idle {
			if at, err := o.f.Seek(0, io.SeekCurrent); at != 0 || err != nil {
				t.Errorf("form %d: an idle file at offset %d (%v)", form, at, err)
			}
		}
		f.mu.Unlock()
	}
}

// TestSendConnReadsAndWritesAsNetDoes checks a Listener connection's reads and
// writes: all of a write larger than the socket's buffer arrives, a closed peer
// reads as io.EOF, a deadline as a timeout, and neither allocates.
func TestSendConnReadsAndWritesAsNetDoes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = Listener(ln)
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*sendConn); !ok {
		t.Fatalf("accepted a %T, want a *sendConn", c)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MB
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("wrote %d bytes of %d: %v", n, len(big), err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("the peer read %d bytes, not the %d written", len(b), len(big))
	}

	msg, buf := []byte("GET / HTTP/1.1\r\n\r\n"), make([]byte, 64)
	if n := testing.AllocsPerRun(50, func() {
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		if n, err := io.ReadFull(c, buf[:len(msg)]); n != len(msg) || err != nil {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations to read and write", n)
	}

	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	var ne net.Error
	if _, err := c.Read(buf); !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past its deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	peer.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read from a closed peer: %d, %v; want 0, EOF", n, err)
	}
}
