package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// testPepper is the AUTH_PEPPER of the servers these tests start.
const testPepper = "site-tests-pepper-of-at-least-32-bytes"

// testSecretsKey is the SECRETS_KEY of the servers these tests start.
const testSecretsKey = "t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

// testPayerKey is the payer key of the tests' servers: it pays only the local seller.
const testPayerKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

// served is a running server started by startServer.
type served struct {
	base    string // http://127.0.0.1:port
	siteDir string
	stop    func()
}

// startServer runs the real program's serve command on a free loopback port and
// returns once it listens. The environment is env over a demo catalog's database
// unless env names one.
func startServer(t *testing.T, env map[string]string) served {
	t.Helper()
	if env["DATABASE_URL"] == "" {
		env["DATABASE_URL"] = demoDatabase(t)
	}
	env["HOST"], env["PORT"] = "127.0.0.1", "0"
	if _, ok := env["LOOPBACK_HTTP"]; !ok {
		env["LOOPBACK_HTTP"] = "true" // the tests' browsers reach it over plain HTTP
	}
	if env["AUTH_PEPPER"] == "" {
		env["AUTH_PEPPER"] = testPepper
	}
	if env["SECRETS_KEY"] == "" {
		env["SECRETS_KEY"] = testSecretsKey
	}
	if env["SITE_DIR"] == "" {
		env["SITE_DIR"] = t.TempDir()
	}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"server", "serve"}, getenv, pw, io.Discard); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no start line: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		cancel()
		t.Fatalf("start line %q", line)
	}
	base := strings.TrimSuffix(strings.Fields(line[i:])[0], "/functions/v1/api")
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("run did not shut down")
		}
	}
	t.Cleanup(stop)
	return served{base: base, siteDir: env["SITE_DIR"], stop: stop}
}

func demoDatabase(t *testing.T) string {
	t.Helper()
	dbURL := pgtest.URL(t)
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL, "AUTH_PEPPER": testPepper, "SECRETS_KEY": testSecretsKey}[k]
	}
	for _, cmd := range []string{"migrate", "demo"} {
		if err := run(context.Background(), []string{"server", cmd}, getenv, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	return dbURL
}

func readManifest(t *testing.T, siteDir string) (string, generator.Manifest) {
	t.Helper()
	dir := generator.Site{Dir: siteDir}.Current()
	if dir == "" {
		t.Fatal("no site published")
	}
	raw, err := os.ReadFile(filepath.Join(dir, generator.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m generator.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// fetch GETs a URL without letting the client undo the gzip, and returns the body.
func fetch(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept-Encoding", "identity")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// TestLiveServiceAnswersTheGeneratedFilesByteForByte checks rule 7 of the contract:
// the unfiltered list, every slug and every merchant, and every page, answer with
// exactly the bytes and ETags of the files the generator wrote.
func TestLiveServiceAnswersTheGeneratedFilesByteForByte(t *testing.T) {
	t.Parallel()
	srv := startServer(t, map[string]string{})
	dir, man := readManifest(t, srv.siteDir)
	if man.Counts.Methods < 50 || man.Counts.Merchants < 10 {
		t.Fatalf("manifest counts %+v", man.Counts)
	}
	jsonFiles := 0
	for _, f := range man.Files {
		file, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		res, body := fetch(t, srv.base+f.URL)
		if res.StatusCode != 200 || !bytes.Equal(body, file) {
			t.Fatalf("%s: live answer (%d, %d bytes) differs from %s (%d bytes)", f.URL, res.StatusCode, len(body), f.Path, len(file))
		}
		if got := res.Header.Get("ETag"); got != f.ETag {
			t.Errorf("%s: live ETag %s, manifest %s", f.URL, got, f.ETag)
		}
		if got := res.Header.Get("Content-Type"); got != f.ContentType {
			t.Errorf("%s: live Content-Type %q, manifest %q", f.URL, got, f.ContentType)
		}
		gz, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		res, body = fetch(t, srv.base+f.URL, "Accept-Encoding", "gzip")
		if !bytes.Equal(body, gz) || res.Header.Get("ETag") != f.GzipETag {
			t.Errorf("%s: live gzip differs from %s.gz", f.URL, f.Path)
		}
		br, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)+".br"))
		if err != nil {
			t.Fatal(err)
		}
		res, body = fetch(t, srv.base+f.URL, "Accept-Encoding", "gzip, deflate, br")
		if !bytes.Equal(body, br) || res.Header.Get("ETag") != f.BrotliETag || res.Header.Get("Content-Encoding") != "br" {
			t.Errorf("%s: live brotli differs from %s.br", f.URL, f.Path)
		}
		if strings.HasPrefix(f.URL, "/functions/") {
			jsonFiles++
		}
	}
	if want := 1 + man.Counts.Methods + man.Counts.Merchants; jsonFiles != want {
		t.Errorf("%d JSON files, want %d", jsonFiles, want)
	}
}

// TestServerBootsFromTheSiteOnDiskWhileTheDatabaseIsDown starts the server on a
// database that does not exist, over a site published earlier: the directory answers
// from the files, and /health says the database is unavailable.
func TestServerBootsFromTheSiteOnDiskWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	first := startServer(t, map[string]string{})
	first.stop()
	dir, man := readManifest(t, first.siteDir)

	down := strings.Replace(demoURLWithoutDatabase(t), "DBNAME", "waystation_no_such_database", 1)
	srv := startServer(t, map[string]string{"DATABASE_URL": down, "SITE_DIR": first.siteDir})
	res, body := fetch(t, srv.base+"/functions/v1/api/api/public/v1/services")
	list, _ := os.ReadFile(filepath.Join(dir, generator.ListFile))
	if res.StatusCode != 200 || !bytes.Equal(body, list) {
		t.Fatalf("list from disk: %d, %d bytes, want %d", res.StatusCode, len(body), len(list))
	}
	res, body = fetch(t, srv.base+"/")
	if res.StatusCode != 200 || !strings.Contains(string(body), "Sellers for AI agents") {
		t.Fatalf("home page from disk: %d", res.StatusCode)
	}
	_, body = fetch(t, srv.base+"/functions/v1/api/health")
	var health struct {
		Status   string `json:"status"`
		Database string `json:"database"`
		Snapshot struct {
			ID      string `json:"id"`
			Methods int    `json:"methods"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(body, &health); err != nil {
		t.Fatal(err)
	}
	if health.Status != "degraded" || health.Database != "unavailable" || health.Snapshot.ID != man.Snapshot.ID || health.Snapshot.Methods != man.Counts.Methods {
		t.Fatalf("health %s", body)
	}
}

// demoURLWithoutDatabase is the test server's URL with the database name replaced by
// DBNAME.
func demoURLWithoutDatabase(t *testing.T) string {
	t.Helper()
	u := pgtest.URL(t)
	i := strings.Index(u, "://")
	slash := strings.Index(u[i+3:], "/")
	q := strings.IndexAny(u[i+3+slash+1:], "?")
	if slash < 0 || q < 0 {
		t.Fatalf("cannot take the database out of %s", u)
	}
	start := i + 3 + slash + 1
	return u[:start] + "DBNAME" + u[start+q:]
}

// tool finds a program the edge and browser tests drive. Outside CI a missing one
// skips the test; under CI=true it fails it, since make test installs them.
func tool(t *testing.T, name string, paths ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (make test installs it with .ci/tools.sh)", name)
	}
	t.Skipf("%s is not installed; run .ci/tools.sh", name)
	return ""
}
