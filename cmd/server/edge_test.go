package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// brotliModule is where Debian's libnginx-mod-http-brotli-static puts the module that
// serves the site's .br files.
const brotliModule = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"

// startNginx runs nginx in the foreground as a child of the test, with the example
// configuration pointed at the site and the service (its replicas, when there are
// more, in round robin), on a free loopback port, and returns its URL and the path of
// its error log. It is killed by its pid when the test ends.
func startNginx(t *testing.T, siteDir string, origins ...string) (base, errorLog string) {
	t.Helper()
	bin := tool(t, "nginx", "/usr/sbin/nginx")
	example, err := os.ReadFile(filepath.Join("..", "..", "generator", "nginx.conf.example"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	prefix := t.TempDir()
	site, err := filepath.Abs(siteDir)
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer(
		"/srv/waystation/site", site,
		"server 127.0.0.1:8080 max_fails=0;", "server "+strings.Join(origins, " max_fails=0;\n    server ")+" max_fails=0;",
		"listen 8081;", "listen "+addr+";",
	).Replace(string(example))
	// The brotli static module, which make test installs; without it (a developer's
	// machine without root) nginx serves gzip only, and the test says so.
	loadModule := ""
	if _, err := os.Stat(brotliModule); err == nil {
		loadModule = "load_module " + brotliModule + ";"
	} else if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing: make test installs libnginx-mod-http-brotli-static", brotliModule)
	} else {
		t.Logf("no %s: nginx serves no brotli in this test", brotliModule)
		conf = strings.ReplaceAll(conf, "brotli_static on;", "")
	}
	os.WriteFile(filepath.Join(prefix, "waystation.conf"), []byte(conf), 0o644)
	mimeTypes := "/etc/nginx/mime.types"
	if _, err := os.Stat(mimeTypes); err != nil {
		mimeTypes = filepath.Join(prefix, "mime.types")
		os.WriteFile(mimeTypes, []byte("types { text/html html; text/css css; }\n"), 0o644)
	}
	main := fmt.Sprintf(`%[3]s
daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 64; }
http {
    include %[2]s;
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/waystation.conf;
}
`, prefix, mimeTypes, loadModule)
	os.WriteFile(filepath.Join(prefix, "nginx.conf"), []byte(main), 0o644)

	cmd := exec.Command(bin, "-p", prefix, "-c", filepath.Join(prefix, "nginx.conf"), "-e", filepath.Join(prefix, "error.log"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			t.Logf("nginx output:\n%s\nerror.log:\n%s", out.String(), log)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			t.Fatalf("nginx exited:\n%s\n%s", out.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("nginx did not listen")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr, filepath.Join(prefix, "error.log")
}

// TestNginxServesTheSiteAndPassesTheRestToTheService puts the example nginx
// configuration in front of the live service: the snapshot's routes come from the
// files with the service's bytes, headers and ETags, revalidation gets 304, and the
// dynamic routes pass through.
func TestNginxServesTheSiteAndPassesTheRestToTheService(t *testing.T) {
	t.Parallel()
	srv := startServer(t, map[string]string{})
	dir, man := readManifest(t, srv.siteDir)
	edge, _ := startNginx(t, srv.siteDir, strings.TrimPrefix(srv.base, "http://"))

	const api = "/functions/v1/api/api/public/v1"
	var slug, host string
	for _, f := range man.Files {
		switch {
		case slug == "" && strings.HasPrefix(f.URL, api+"/services/"):
			slug = strings.TrimPrefix(f.URL, api+"/services/")
		case host == "" && strings.HasPrefix(f.URL, api+"/merchants/"):
			host = strings.TrimPrefix(f.URL, api+"/merchants/")
		}
	}
	fromFiles := []string{api + "/services", api + "/services/" + slug, api + "/merchants/" + host, "/", "/methods/" + slug}
	byURL := map[string]int{}
	for i, f := range man.Files {
		byURL[f.URL] = i
	}
	for _, u := range fromFiles {
		f := man.Files[byURL[u]]
		file, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		gz, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)+".gz"))

		res, body := fetch(t, edge+u)
		if res.StatusCode != 200 || !bytes.Equal(body, file) {
			t.Fatalf("%s via nginx: %d, %d bytes; the file has %d", u, res.StatusCode, len(body), len(file))
		}
		if res.Header.Get("X-Request-Id") != "" {
			t.Errorf("%s came from the service, not the files", u)
		}
		want := map[string]string{"Content-Type": f.ContentType, "Cache-Control": "public, max-age=300", "ETag": f.ETag}
		if strings.HasPrefix(u, "/functions/") {
			want["Access-Control-Allow-Origin"] = "*"
		}
		if u == "/" {
			want["Link"] = `</.well-known/api-catalog>; rel="api-catalog"`
		}
		for k, v := range want {
			if got := res.Header.Get(k); got != v {
				t.Errorf("%s via nginx: %s %q, want %q", u, k, got, v)
			}
		}
		live, liveBody := fetch(t, srv.base+u)
		if !bytes.Equal(liveBody, body) || live.Header.Get("ETag") != res.Header.Get("ETag") {
			t.Errorf("%s: nginx and the service disagree", u)
		}

		res, body = fetch(t, edge+u, "Accept-Encoding", "gzip")
		if res.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(body, gz) || res.Header.Get("ETag") != f.GzipETag {
			t.Errorf("%s via nginx with gzip: %q, ETag %s, %d bytes (want the .gz, %d bytes)", u, res.Header.Get("Content-Encoding"), res.Header.Get("ETag"), len(body), len(gz))
		}
		if !strings.Contains(res.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s via nginx with gzip: Vary %q", u, res.Header.Get("Vary"))
		}
		if _, err := os.Stat(brotliModule); err == nil {
			br, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)+".br"))
			for _, ae := range []string{"br", "gzip, deflate, br"} {
				res, body = fetch(t, edge+u, "Accept-Encoding", ae)
				if res.Header.Get("Content-Encoding") != "br" || !bytes.Equal(body, br) || res.Header.Get("ETag") != f.BrotliETag {
					t.Errorf("%s via nginx with %s: %q, ETag %s, %d bytes (want the .br, %d bytes)", u, ae, res.Header.Get("Content-Encoding"), res.Header.Get("ETag"), len(body), len(br))
				}
				live, liveBody := fetch(t, srv.base+u, "Accept-Encoding", ae)
				if !bytes.Equal(liveBody, body) || live.Header.Get("ETag") != res.Header.Get("ETag") {
					t.Errorf("%s with %s: nginx and the service disagree", u, ae)
				}
			}
		}
		for _, tag := range []string{f.ETag, f.GzipETag, f.BrotliETag, `W/` + f.ETag, `"other", ` + f.GzipETag} {
			res, body = fetch(t, edge+u, "If-None-Match", tag)
			if res.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("%s via nginx, If-None-Match %s: %d", u, tag, res.StatusCode)
			}
		}
		if res, _ := fetch(t, edge+u, "If-None-Match", `"other"`); res.StatusCode != 200 {
			t.Errorf("%s via nginx, another ETag: %d", u, res.StatusCode)
		}
	}

	// Dynamic routes come from the service.
	for _, tc := range []struct {
		path   string
		status int
	}{
		{api + "/services?category=blockchain&limit=2", 200},
		{api + "/services?verified=true", 400},
		{api + "/services/no-such-method", 404},
		{"/functions/v1/api/health", 200},
		{"/functions/v1/api/openapi.json", 200},
		{"/search?q=block", 200},
		{"/no/such/page", 404},
		{"/docs/openapi.json", 200}, // redirected to the document
	} {
		res, body := fetch(t, edge+tc.path)
		if res.StatusCode != tc.status {
			t.Errorf("%s via nginx: %d, want %d: %.200s", tc.path, res.StatusCode, tc.status, body)
		}
	}
	// The discovery documents come from the service, with its headers, GET and HEAD.
	for _, tc := range []struct{ path, contentType, holds string }{
		{"/.well-known/api-catalog", `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"`, `"service-desc"`},
		{"/.well-known/security.txt", "text/plain; charset=utf-8", "Expires: "},
		{"/robots.txt", "text/plain; charset=utf-8", "Disallow: /functions/"},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			req, _ := http.NewRequest(method, edge+tc.path, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != tc.contentType || res.Header.Get("Cache-Control") != "public, max-age=300" ||
				(method == http.MethodGet) != bytes.Contains(body, []byte(tc.holds)) {
				t.Errorf("%s %s via nginx: %d %q %q: %.200s", method, tc.path, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"), body)
			}
			if tc.path == "/.well-known/api-catalog" && res.Header.Get("Link") != `</.well-known/api-catalog>; rel="api-catalog"` {
				t.Errorf("%s %s via nginx: Link %q", method, tc.path, res.Header.Get("Link"))
			}
		}
	}

	res, body := fetch(t, edge+api+"/services?limit=1")
	if res.StatusCode != 200 || !bytes.Contains(body, []byte(`"count":1`)) {
		t.Errorf("filtered list via nginx: %d %.200s", res.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodOptions, edge+api+"/services", nil)
	req.Header.Set("Origin", "https://example.com")
	req.Header.Set("Access-Control-Request-Method", "GET")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusNoContent {
		t.Errorf("preflight via nginx: %v %v", res, err)
	}

	// With the service gone, the snapshot routes still answer from the files, which
	// proves nginx served them; what only the service answers fails at the edge.
	srv.stop()
	for _, u := range fromFiles {
		if res, _ := fetch(t, edge+u); res.StatusCode != 200 {
			t.Errorf("%s via nginx without the service: %d, so it was not served from the files", u, res.StatusCode)
		}
	}
	if res, _ := fetch(t, edge+api+"/services?limit=1"); res.StatusCode < 500 {
		t.Errorf("filtered list via nginx without the service: %d", res.StatusCode)
	}
}
