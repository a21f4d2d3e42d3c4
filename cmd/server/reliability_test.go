package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// lockedBuffer collects a server's log from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loggedServer is the serve command run in-process with its log kept.
type loggedServer struct {
	base string // http://127.0.0.1:port
	logs *lockedBuffer
	// stop cancels run's context and returns what run returned.
	stop func() error
}

// serveLogged runs serve in-process on a free loopback port, like startServer, and
// keeps its log.
func serveLogged(t *testing.T, env map[string]string) loggedServer {
	t.Helper()
	env["HOST"], env["PORT"] = "127.0.0.1", "0"
	for k, v := range map[string]string{"AUTH_PEPPER": testPepper, "SECRETS_KEY": testSecretsKey, "PROBE_INTERVAL": "0"} {
		if env[k] == "" {
			env[k] = v
		}
	}
	if env["SITE_DIR"] == "" {
		env["SITE_DIR"] = t.TempDir()
	}
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"server", "serve"}, func(k string) string { return env[k] }, pw, logs)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no start line: %v (%v)\n%s", err, <-done, logs)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		cancel()
		t.Fatalf("start line %q", line)
	}
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = errors.New("run did not return within 30s of its context's end")
			}
		})
		return runErr
	}
	t.Cleanup(func() { stop() })
	return loggedServer{base: strings.TrimSuffix(strings.Fields(line[i:])[0], "/functions/v1/api"), logs: logs, stop: stop}
}

// apiKeys makes a user with one agent in the database at dbURL and returns a user key
// and an agent key valid under testPepper.
func apiKeys(t *testing.T, dbURL string) (userKey, agentKey string) {
	t.Helper()
	ctx := context.Background()
	store, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u, err := store.EnsureUser(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.EnsureAgent(ctx, u.ID, "scout")
	if err != nil {
		t.Fatal(err)
	}
	key := func(scope auth.Scope, agentID string) string {
		k, err := auth.Generate(scope, []byte(testPepper))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.InsertKey(ctx, k, u.ID, agentID, 0); err != nil {
			t.Fatal(err)
		}
		return k.Token
	}
	return key(auth.ScopeUser, ""), key(auth.ScopeAgent, a.ID)
}

// reply is an answer read in full.
type reply struct {
	*http.Response
	body []byte
}

// problemCode is the code of a problem+json answer, or "".
func (r reply) problemCode() string {
	var p struct{ Code string }
	json.Unmarshal(r.body, &p)
	return p.Code
}

var testClient = &http.Client{Timeout: 60 * time.Second}

// send makes a request to the API with key (none if empty) and body (none if empty).
func send(method, target, key, body string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		return reply{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := testClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return reply{res, b}, err
}

// mustSend is send that fails the test on a transport error.
func mustSend(t *testing.T, method, target, key, body string) reply {
	t.Helper()
	r, err := send(method, target, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return r
}

func sessionBody(clientID string) string {
	return `{"type":"checkout","description":"Buy a city map","clientSessionId":"` + clientID + `"}`
}

func eventBody(clientID string) string {
	return `{"type":"runtime.step","clientEventId":"` + clientID + `","data":{"n":1}}`
}

// createSession opens a session and returns its id.
func createSession(t *testing.T, api, agentKey, clientID string) string {
	t.Helper()
	r := mustSend(t, "POST", api+"/sessions", agentKey, sessionBody(clientID))
	var s struct{ ID string }
	json.Unmarshal(r.body, &s)
	if r.StatusCode != http.StatusCreated || s.ID == "" {
		t.Fatalf("create session: %d %s", r.StatusCode, r.body)
	}
	return s.ID
}

// throwawayPostgres is a PostgreSQL cluster of the test's own, in a temporary
// directory listening on a Unix socket only, which the test may stop and start
// without disturbing the shared cluster every other test uses.
type throwawayPostgres struct {
	bin  string // the PostgreSQL binaries .ci/db.sh uses
	dir  string // socket directory; data/ and log inside
	cred *syscall.Credential
}

// postgresBin is the bin directory of the highest PostgreSQL version installed, as
// .ci/db.sh picks it. Without one the test is skipped, except under CI where make
// test has installed it.
func postgresBin(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestMajor := "", -1
	for _, d := range dirs {
		n, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil || n <= bestMajor {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err != nil {
			continue
		}
		best, bestMajor = d, n
	}
	if best == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no PostgreSQL server under /usr/lib/postgresql/<N>/bin (make test installs it with .ci/db.sh)")
		}
		t.Skip("no PostgreSQL server under /usr/lib/postgresql/<N>/bin to run a throwaway cluster; run make db")
	}
	return best
}

// startThrowawayPostgres initialises and starts a cluster, stopped and removed when
// the test ends. As root the cluster runs as the postgres user, as .ci/db.sh does.
func startThrowawayPostgres(t *testing.T) *throwawayPostgres {
	t.Helper()
	pg := &throwawayPostgres{bin: postgresBin(t)}
	dir, err := os.MkdirTemp("", "waystation-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pg.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("PostgreSQL cannot run as root and there is no postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := pg.command("initdb", "-D", pg.data(), "-A", "trust", "--username=postgres", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf("\nlisten_addresses = ''\nport = 5432\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 50\n", dir)
	f, err := os.OpenFile(filepath.Join(pg.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(conf)
	f.Close()
	pg.start(t)
	t.Cleanup(func() { pg.stop(t) })
	return pg
}

func (pg *throwawayPostgres) data() string { return filepath.Join(pg.dir, "data") }

// command runs a PostgreSQL program as the cluster's owner, from /, its output going
// to a file rather than a pipe a server it starts could keep open.
func (pg *throwawayPostgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(pg.bin, name), args...)
	cmd.Dir = "/"
	if pg.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	}
	return cmd
}

func (pg *throwawayPostgres) pgctl(t *testing.T, args ...string) {
	t.Helper()
	out, err := os.CreateTemp("", "waystation-pgctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := pg.command("pg_ctl", append([]string{"-D", pg.data()}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(out.Name())
		logs, _ := os.ReadFile(filepath.Join(pg.dir, "log"))
		t.Fatalf("pg_ctl %v: %v\n%s\n%s", args, err, b, logs)
	}
}

func (pg *throwawayPostgres) start(t *testing.T) {
	t.Helper()
	pg.pgctl(t, "-l", filepath.Join(pg.dir, "log"), "-w", "-t", "60", "start")
}

func (pg *throwawayPostgres) stop(t *testing.T) {
	t.Helper()
	if pg.command("pg_ctl", "-D", pg.data(), "status").Run() == nil {
		pg.pgctl(t, "-m", "fast", "-w", "-t", "60", "stop")
	}
}

func (pg *throwawayPostgres) url(db string) string {
	return "postgres://postgres@/" + db + "?host=" + url.QueryEscape(pg.dir) + "&port=5432&sslmode=disable"
}

// exec runs SQL on database db of the cluster.
func (pg *throwawayPostgres) exec(t *testing.T, db, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg.url(db))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// listening reports whether a connection LISTENs for events on database db.
func (pg *throwawayPostgres) listening(db string) bool {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg.url(db))
	if err != nil {
		return false
	}
	defer c.Close(ctx)
	var n int
	c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND query = $2`, db, "LISTEN "+postgres.EventChannel).Scan(&n)
	return n > 0
}

// eventually retries f every 100ms until it returns true or d has passed.
func eventually(d time.Duration, f func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if f() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestDatabaseOutageKeepsTheDirectoryUpAndTheAPIRecoversWithoutRestart stops
// PostgreSQL under a running server: the directory keeps answering from its
// snapshot, the authenticated API answers 503 database_unavailable (never a 500),
// and once PostgreSQL is back writes succeed and long polls are woken again, without
// restarting the server.
func TestDatabaseOutageKeepsTheDirectoryUpAndTheAPIRecoversWithoutRestart(t *testing.T) {
	t.Parallel()
	pg := startThrowawayPostgres(t)
	pg.exec(t, "postgres", "CREATE DATABASE waystation")
	dbURL := pg.url("waystation")
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL, "AUTH_PEPPER": testPepper, "SECRETS_KEY": testSecretsKey}[k]
	}
	for _, cmd := range []string{"migrate", "demo"} {
		if err := run(context.Background(), []string{"server", cmd}, getenv, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL})
	api := srv.base + "/functions/v1/api"
	dir := api + "/api/public/v1"

	sid := createSession(t, api, agentKey, "before")
	list := mustSend(t, "GET", dir+"/services", "", "")
	var items struct {
		Items []struct{ Slug, Hostname string }
	}
	json.Unmarshal(list.body, &items)
	if list.StatusCode != 200 || len(items.Items) == 0 {
		t.Fatalf("list: %d", list.StatusCode)
	}
	slug, host := items.Items[0].Slug, items.Items[0].Hostname
	method := mustSend(t, "GET", dir+"/services/"+slug, "", "")

	pg.stop(t)

	if r := mustSend(t, "GET", dir+"/services", "", ""); r.StatusCode != 200 || !bytes.Equal(r.body, list.body) {
		t.Errorf("list while the database is down: %d, %d bytes, want the snapshot's %d", r.StatusCode, len(r.body), len(list.body))
	}
	if r := mustSend(t, "GET", dir+"/services/"+slug, "", ""); r.StatusCode != 200 || !bytes.Equal(r.body, method.body) {
		t.Errorf("method while the database is down: %d", r.StatusCode)
	}
	for _, path := range []string{dir + "/merchants/" + host, dir + "/services?category=weather&limit=2", srv.base + "/", srv.base + "/methods/" + slug} {
		if r := mustSend(t, "GET", path, "", ""); r.StatusCode != 200 {
			t.Errorf("%s while the database is down: %d", path, r.StatusCode)
		}
	}
	down := []struct{ method, path, key, body string }{
		{"POST", "/sessions", agentKey, sessionBody("during")},
		{"POST", "/sessions/" + sid + "/events", agentKey, eventBody("during")},
		{"GET", "/sessions/" + sid, agentKey, ""},
		{"GET", "/sessions/" + sid + "/events?wait=5", userKey, ""},
		{"GET", "/sessions", userKey, ""},
		{"GET", "/agent/me", agentKey, ""},
		{"POST", "/agents", userKey, `{"name":"runner"}`},
	}
	for _, c := range down {
		r := mustSend(t, c.method, api+c.path, c.key, c.body)
		if r.StatusCode != http.StatusServiceUnavailable || r.problemCode() != "database_unavailable" ||
			r.Header.Get("Content-Type") != "application/problem+json" ||
			r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s while the database is down: %d %v %s", c.method, c.path, r.StatusCode, r.Header, r.body)
		}
	}
	// The approval page cannot sign anyone in without the database: it says so, 503.
	form := url.Values{"csrf": {"tok"}, "key": {userKey}}
	req, _ := http.NewRequest("POST", srv.base+"/app/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "__Host-waystation_signin", Value: "tok"})
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("sign-in while the database is down: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	var health struct{ Status, Database string }
	if !eventually(5*time.Second, func() bool {
		json.Unmarshal(mustSend(t, "GET", api+"/health", "", "").body, &health)
		return health.Database == "unavailable"
	}) || health.Status != "degraded" {
		t.Errorf("health while the database is down: %+v", health)
	}

	pg.start(t)

	var r reply
	if !eventually(30*time.Second, func() bool {
		r = mustSend(t, "POST", api+"/sessions", agentKey, sessionBody("during"))
		return r.StatusCode == http.StatusCreated
	}) {
		t.Fatalf("writes did not recover after PostgreSQL came back: %d %s", r.StatusCode, r.body)
	}
	if r := mustSend(t, "POST", api+"/sessions/"+sid+"/events", agentKey, eventBody("after")); r.StatusCode != http.StatusCreated {
		t.Fatalf("append after recovery: %d %s", r.StatusCode, r.body)
	}
	if !eventually(30*time.Second, func() bool { return pg.listening("waystation") }) {
		t.Fatal("the event listener did not reconnect")
	}
	// A long poll now waits for the next event, which only the reconnected listener
	// can announce before the poll's 25 s are up.
	var last struct{ LastEventSeq int64 }
	json.Unmarshal(mustSend(t, "GET", api+"/sessions/"+sid, agentKey, "").body, &last)
	type polled struct {
		r       reply
		err     error
		elapsed time.Duration
	}
	pollc := make(chan polled, 1)
	go func() {
		start := time.Now()
		r, err := send("GET", api+"/sessions/"+sid+"/events?wait=25&after="+strconv.FormatInt(last.LastEventSeq, 10), userKey, "")
		pollc <- polled{r, err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)
	if r := mustSend(t, "POST", api+"/sessions/"+sid+"/events", agentKey, eventBody("woken")); r.StatusCode != http.StatusCreated {
		t.Fatalf("append: %d %s", r.StatusCode, r.body)
	}
	p := <-pollc
	if p.err != nil {
		t.Fatal(p.err)
	}
	var page struct {
		Items []struct{ ClientEventID string }
	}
	json.Unmarshal(p.r.body, &page)
	if p.r.StatusCode != 200 || len(page.Items) != 1 || page.Items[0].ClientEventID != "woken" {
		t.Fatalf("long poll after recovery: %d %s", p.r.StatusCode, p.r.body)
	}
	if p.elapsed > 15*time.Second {
		t.Errorf("the long poll was answered after %s: the event was not announced", p.elapsed)
	}
	if logs := srv.logs.String(); strings.Contains(logs, "internal error") || strings.Contains(logs, "panic") {
		t.Errorf("the outage was logged as an internal error:\n%s", logs)
	}
}

// child is the server binary running serve as a child process.
type child struct {
	cmd  *exec.Cmd
	base string
	logs *lockedBuffer
	done chan struct{} // closed once the process has exited, with err set
	err  error
}

// startChild runs bin serve on a free loopback port and returns once it listens. It
// is killed by its pid when the test ends, if it still runs.
func startChild(t *testing.T, bin string, env map[string]string) *child {
	t.Helper()
	return startActivated(t, bin, env, nil)
}

// startActivated is startChild answering on socket, when not nil, passed as systemd
// passes a socket-activated service its socket: as descriptor 3, with LISTEN_FDS=1
// and LISTEN_PID the server's pid (the shell's, which exec keeps).
func startActivated(t *testing.T, bin string, env map[string]string, socket *os.File) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, "serve"), logs: &lockedBuffer{}, done: make(chan struct{})}
	if socket != nil {
		c.cmd = exec.Command("sh", "-c", `LISTEN_PID=$$ exec "$0" "$@"`, bin, "serve")
		c.cmd.ExtraFiles = []*os.File{socket}
		c.cmd.Env = []string{"LISTEN_FDS=1"}
	}
	c.cmd.Env = append(c.cmd.Env, "PATH="+os.Getenv("PATH"), "HOST=127.0.0.1", "PORT=0", "PROBE_INTERVAL=0", "LOG_LEVEL=WARN",
		"AUTH_PEPPER="+testPepper, "SECRETS_KEY="+testSecretsKey)
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stderr = c.logs
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		i := strings.Index(line, "http://")
		if i < 0 {
			t.Fatalf("start line %q\n%s", line, c.logs)
		}
		c.base = strings.TrimSuffix(strings.Fields(line[i:])[0], "/functions/v1/api")
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start within 60s\n%s", c.logs)
	}
	return c
}

// write is one write the agent sent: a session (session empty) or an event.
type write struct {
	session, clientID string
}

func (w write) send(api, agentKey string) (reply, error) {
	if w.session == "" {
		return send("POST", api+"/sessions", agentKey, sessionBody(w.clientID))
	}
	return send("POST", api+"/sessions/"+w.session+"/events", agentKey, eventBody(w.clientID))
}

// TestAcknowledgedWritesSurviveSIGKILL kills the server binary with SIGKILL while
// agents create sessions and append events concurrently, restarts it, and checks
// that every write that was answered 2xx is there with the seq it was given, that
// every session's events are numbered 1, 2, 3... without gaps, and that writes cut
// short by the kill can be retried to success.
func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	dbURL := pgtest.URL(t)
	if err := run(context.Background(), []string{"server", "migrate"}, func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL}[k]
	}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	_, agentKey := apiKeys(t, dbURL)
	bin := buildServer(t)
	env := map[string]string{"DATABASE_URL": dbURL, "SITE_DIR": t.TempDir()}
	first := startChild(t, bin, env)
	api := first.base + "/functions/v1/api"

	shared := make([]string, 3)
	for i := range shared {
		shared[i] = createSession(t, api, agentKey, "shared-"+strconv.Itoa(i))
	}
	var (
		mu       sync.Mutex
		sessions = map[string]string{} // acknowledged: clientSessionId -> id
		events   = map[write]int64{}   // acknowledged: -> seq
		cut      []write               // sent but not acknowledged
		acks     atomic.Int64
		kill     = make(chan struct{})
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	const writers, killAfter = 12, 150
	for n := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				w := write{clientID: fmt.Sprintf("w%d-%d", n, i)}
				if i%4 != 0 {
					w.session = shared[(n+i)%len(shared)]
				}
				r, err := w.send(api, agentKey)
				if err != nil || r.StatusCode/100 != 2 {
					mu.Lock()
					cut = append(cut, w)
					mu.Unlock()
					if err == nil {
						t.Errorf("write %+v before the kill: %d %s", w, r.StatusCode, r.body)
					}
					return
				}
				var ack struct {
					ID  string
					Seq int64
				}
				json.Unmarshal(r.body, &ack)
				mu.Lock()
				if w.session == "" {
					sessions[w.clientID] = ack.ID
				} else {
					events[w] = ack.Seq
				}
				mu.Unlock()
				if acks.Add(1) >= killAfter {
					killOnce.Do(func() { close(kill) })
				}
			}
		})
	}
	select {
	case <-kill:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d writes acknowledged in 60s", acks.Load())
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d writes acknowledged, %d cut short by SIGKILL", acks.Load(), len(cut))

	second := startChild(t, bin, env)
	api = second.base + "/functions/v1/api"
	for clientID, id := range sessions {
		if r := mustSend(t, "GET", api+"/sessions/"+id, agentKey, ""); r.StatusCode != 200 {
			t.Errorf("acknowledged session %s (%s) is gone: %d", clientID, id, r.StatusCode)
		}
	}
	logs := checkEventLogs(t, api, agentKey)
	for w, seq := range events {
		if got, ok := logs[w.session][w.clientID]; !ok || got != seq {
			t.Errorf("acknowledged event %s of %s: seq %d in the log (present %v), acknowledged as %d", w.clientID, w.session, got, ok, seq)
		}
	}

	// A write cut short may have been applied or not; its retry must say which, and
	// at worst ask to wait while the first attempt's claim is in progress.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	retry := func(final bool) {
		for _, w := range cut {
			r := mustSend(t, "POST", api+pathOf(w), agentKey, bodyOf(w))
			ok := r.StatusCode == 200 || r.StatusCode == 201
			if !final && r.StatusCode == http.StatusConflict && r.problemCode() == "idempotency_in_progress" {
				ok = true
			}
			if !ok {
				t.Errorf("retry of %+v cut short by the kill (final %v): %d %s", w, final, r.StatusCode, r.body)
			}
		}
	}
	retry(false)
	// Claims the killed server left in progress are forgotten after two minutes.
	if _, err := conn.Exec(ctx, `UPDATE idempotency_keys SET created_at = created_at - interval '3 minutes' WHERE status IS NULL`); err != nil {
		t.Fatal(err)
	}
	retry(true)
	logs = checkEventLogs(t, api, agentKey)
	for _, w := range cut {
		if _, ok := logs[w.session][w.clientID]; w.session != "" && !ok {
			t.Errorf("retried event %s is not in the log", w.clientID)
		}
	}

	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.done:
		if second.err != nil {
			t.Errorf("the server exited with %v on SIGTERM\n%s", second.err, second.logs)
		}
	case <-time.After(30 * time.Second):
		t.Error("the server did not exit within 30s of SIGTERM")
	}
}

func pathOf(w write) string {
	if w.session == "" {
		return "/sessions"
	}
	return "/sessions/" + w.session + "/events"
}

func bodyOf(w write) string {
	if w.session == "" {
		return sessionBody(w.clientID)
	}
	return eventBody(w.clientID)
}

// checkEventLogs reads every session of the agent and its whole event log, fails
// the test unless each log is numbered 1..lastEventSeq without gaps or repeated
// client ids, and returns each session's client event ids with their seqs.
func checkEventLogs(t *testing.T, api, agentKey string) map[string]map[string]int64 {
	t.Helper()
	out := map[string]map[string]int64{}
	cursor := ""
	for {
		target := api + "/sessions?limit=200"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		r := mustSend(t, "GET", target, agentKey, "")
		var page struct {
			Items []struct {
				ID           string
				LastEventSeq int64
			}
			NextCursor *string
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.StatusCode != 200 {
			t.Fatalf("sessions: %d %s", r.StatusCode, r.body)
		}
		for _, s := range page.Items {
			ids := map[string]int64{}
			var seqs []int64
			for after := int64(0); ; {
				r := mustSend(t, "GET", api+"/sessions/"+s.ID+"/events?limit=200&after="+strconv.FormatInt(after, 10), agentKey, "")
				var evs struct {
					Items []struct {
						Seq           int64
						ClientEventID *string
					}
				}
				if err := json.Unmarshal(r.body, &evs); err != nil || r.StatusCode != 200 {
					t.Fatalf("events: %d %s", r.StatusCode, r.body)
				}
				for _, ev := range evs.Items {
					seqs = append(seqs, ev.Seq)
					if ev.ClientEventID != nil {
						if _, dup := ids[*ev.ClientEventID]; dup {
							t.Errorf("session %s: clientEventId %s twice", s.ID, *ev.ClientEventID)
						}
						ids[*ev.ClientEventID] = ev.Seq
					}
					after = ev.Seq
				}
				if len(evs.Items) < 200 {
					break
				}
			}
			want := make([]int64, s.LastEventSeq)
			for i := range want {
				want[i] = int64(i + 1)
			}
			if !slices.Equal(seqs, want) {
				t.Errorf("session %s: seqs %v, want 1..%d", s.ID, seqs, s.LastEventSeq)
			}
			out[s.ID] = ids
		}
		if page.NextCursor == nil {
			return out
		}
		cursor = *page.NextCursor
	}
}

// TestShutdownLetsInFlightRequestsFinish ends run's context while a long poll, an
// event stream and a slow download are in flight: the download completes in full,
// the long poll answers at once with what it has, the stream ends cleanly, and run
// returns without hitting its shutdown timeout.
func TestShutdownLetsInFlightRequestsFinish(t *testing.T) {
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL})
	api := srv.base + "/functions/v1/api"
	sid := createSession(t, api, agentKey, "s1")
	doc := mustSend(t, "GET", api+"/openapi.json", "", "")
	if doc.StatusCode != 200 || len(doc.body) < 64<<10 {
		t.Fatalf("openapi.json: %d, %d bytes", doc.StatusCode, len(doc.body))
	}

	// The slow client: a small receive buffer, and nothing read past the first bytes
	// until the shutdown has begun.
	addr := strings.TrimPrefix(srv.base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /functions/v1/api/openapi.json HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: identity\r\n\r\n", addr)
	slow := bufio.NewReaderSize(conn, 1024)
	if _, err := slow.Peek(512); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		r       reply
		err     error
		elapsed time.Duration
	}
	poll := make(chan answer, 1)
	go func() {
		start := time.Now()
		r, err := send("GET", api+"/sessions/"+sid+"/events?after=1&wait=30", userKey, "")
		poll <- answer{r, err, time.Since(start)}
	}()
	req, _ := http.NewRequest("GET", api+"/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+userKey)
	req.Header.Set("Accept", "text/event-stream")
	stream, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	if line, err := events.ReadString('\n'); err != nil || line != "id: 1\n" {
		t.Fatalf("event stream: %q %v", line, err)
	}
	time.Sleep(300 * time.Millisecond) // the long poll is waiting by now

	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- srv.stop() }()

	res, err := http.ReadResponse(slow, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	chunk := make([]byte, 4096)
	for {
		n, err := res.Body.Read(chunk)
		body.Write(chunk[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("slow download cut after %d bytes: %v", body.Len(), err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if res.StatusCode != 200 || !bytes.Equal(body.Bytes(), doc.body) {
		t.Errorf("slow download: %d, %d bytes, want %d", res.StatusCode, body.Len(), len(doc.body))
	}

	p := <-poll
	var page struct {
		Items         []json.RawMessage
		SessionStatus string
	}
	if p.err != nil || p.r.StatusCode != 200 || json.Unmarshal(p.r.body, &page) != nil || page.Items == nil || page.SessionStatus != "open" {
		t.Errorf("long poll during shutdown: %v %d %s", p.err, p.r.StatusCode, p.r.body)
	}
	if p.elapsed > 20*time.Second {
		t.Errorf("the long poll held the shutdown for %s", p.elapsed)
	}
	if _, err := io.Copy(io.Discard, events); err != nil {
		t.Errorf("event stream cut instead of ended: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("run returned %v after %s", err, time.Since(start))
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}
