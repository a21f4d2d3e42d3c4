package resource

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
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
	// Kept alive, the 16 clients' answers go through about 16 connections: a few more
	// when the transport dials for a request that an idle connection then takes (the
	// dialled one joins the pool), one an answer if nothing were kept.
	if conns == 0 || conns > 32 {
		t.Errorf("answers sent through %d of the listener's connections, want 1 to 32 (kept alive)", conns)
	}
	for form, f := range res.mem.files {
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
	c, peer := accepted(t, true)
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

// flushProbe stops an answer once its headers are flushed, until the test has
// looked at what the client received.
type flushProbe struct {
	http.ResponseWriter
	flushed, proceed chan struct{}
	at               time.Time // when the headers were flushed
}

func (p *flushProbe) Flush() {
	p.ResponseWriter.(http.Flusher).Flush()
	p.at = time.Now()
	close(p.flushed)
	<-p.proceed
}

func (p *flushProbe) ReadFrom(src io.Reader) (int64, error) {
	return p.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
}

// TestListenerHoldsTheHeadersUntilTheBody checks that on a Listener's connection an
// answer sent from a file has its headers, flushed, held back until the body goes
// with them (MSG_MORE), without corking the connection, and that the next answer on
// the connection is whole.
func TestListenerHoldsTheHeadersUntilTheBody(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"directory","b":[1,2,3]},`), 5000)
	mem := New(JSON, body)
	res, err := mem.FromFiles(published(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	probe := &flushProbe{flushed: make(chan struct{}), proceed: make(chan struct{})}
	var corkedAtFlush int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "probe" {
			probe.ResponseWriter = w
			w = probe
			sc, _ := r.Context().Value(connKey{}).(*sendConn)
			if sc == nil {
				t.Error("the request did not come on a Listener's connection")
			} else {
				corkedAtFlush = corkOf(sc.rc)
			}
		}
		Serve(w, r, res, http.StatusOK)
	}))
	srv.Listener = Listener(srv.Listener)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, query := range []string{"probe", "again"} {
		if _, err := io.WriteString(c, "GET /?"+query+" HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-probe.flushed
			// On loopback a segment sent arrives at once: none must have. The kernel
			// sends held bytes on its own after 200 ms, so a read this test reached
			// later (a loaded machine) proves nothing either way.
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			n, err := br.Read(make([]byte, 1))
			switch late := time.Since(probe.at); {
			case n == 0 && errors.Is(err, os.ErrDeadlineExceeded):
			case late >= 150*time.Millisecond:
				t.Logf("the client read %d bytes (%v) %v after the flush, past what the test can judge", n, err, late)
			default:
				t.Errorf("the client read %d bytes (%v) of headers flushed before the body", n, err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br.Reset(c)
			close(probe.proceed)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(b, body) || resp.Header.Get("Etag") != mem.ETag {
			t.Errorf("answer %d: %d bytes of %d (%v), %v", i, len(b), len(body), err, resp.Header)
		}
	}
	if corkedAtFlush != 0 {
		t.Errorf("TCP_CORK %d on a Listener's connection, want 0 (MSG_MORE holds the headers)", corkedAtFlush)
	}
}

// TestReleaseSendsWhatWritesHeld checks that what writes held with MSG_MORE goes out
// at release when no file followed them.
func TestReleaseSendsWhatWritesHeld(t *testing.T) {
	c, peer := accepted(t, true)
	sc := c.(*sendConn)
	msg := []byte("HTTP/1.1 200 OK\r\n\r\n")
	sc.holdWrites()
	if _, err := sc.Write(msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := peer.Read(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the peer read %d bytes (%v) of a held write", n, err)
	}
	// Pushed out, it is there at once; still held, it would go out with the first
	// probe, 200 ms after the write.
	sc.releaseWrites()
	peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := io.ReadFull(peer, buf); n != len(msg) || err != nil {
		t.Errorf("after release the peer read %d bytes of %d: %v", n, len(msg), err)
	}
}

// BenchmarkSendFile answers a list of about 500 KB from its file over loopback, one
// keep-alive client at a time, through a Listener's connections (raw system calls,
// the headers held by MSG_MORE) and through net's (TCP_CORK): the CPU an answer
// costs the server and the client together (cpu-µs/op, the process's user and
// system time, which a busy machine bends less than ns/op) and the allocations.
func BenchmarkSendFile(b *testing.B) {
	body := bytes.Repeat([]byte(`{"slug":"a-method","name":"A method","price":"0.01"},`), 10000)
	mem := New(JSON, body)
	dir := b.TempDir()
	for i, form := range [...][]byte{mem.Body, mem.Gzip(), mem.Brotli()} {
		if err := os.WriteFile(filepath.Join(dir, "list"+suffixes[i]), form, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	res, err := mem.FromFiles(filepath.Join(dir, "list"))
	if err != nil {
		b.Fatal(err)
	}
	for _, wrap := range []bool{true, false} {
		b.Run([...]string{"net", "listener"}[btoi(wrap)], func(b *testing.B) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				Serve(w, r, res, http.StatusOK)
			}))
			if wrap {
				srv.Listener = Listener(srv.Listener)
			}
			srv.Config.ConnContext = ConnContext
			srv.Start()
			defer srv.Close()
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n")
			br := bufio.NewReaderSize(c, 64<<10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, resp.Body); n != int64(len(body)) || err != nil {
					b.Fatalf("read %d bytes of %d: %v", n, len(body), err)
				}
				resp.Body.Close()
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the CPU time the process has spent, in user and system mode.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// accepted returns both ends of a loopback TCP connection, the server's end accepted
// through Listener when wrap is set; both close when the test ends.
func accepted(t testing.TB, wrap bool) (server, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if wrap {
		ln = Listener(ln)
	}
	if peer, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server, peer
}
