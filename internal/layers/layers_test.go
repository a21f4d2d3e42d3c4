// Package layers holds the test that keeps the program's layers apart: cmd wires;
// generator, web and api are adapters over the domain in internal/; internal/postgres
// implements the domain's store contracts and only cmd knows it.
package layers_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/waystation/waystation"

// rule forbids the packages matching from, but not those matching except, to depend,
// directly or through others, on the packages matching to; a direct rule forbids
// only importing them.
type rule struct {
	name     string
	from, to []string
	except   []string
	direct   bool
}

// The layer rules. A pattern ending in "/..." matches the package and those below.
var rules = []rule{
	{
		name: "only cmd wires the store: nothing but cmd/... (and the tools and test helpers under internal/cmd and internal/postgres) may import internal/postgres",
		from: []string{"..."}, to: []string{"internal/postgres"},
		except: []string{"cmd/...", "internal/cmd/...", "internal/postgres/..."},
	},
	{
		name: "web gets the API's base path and URLs through its config: web must not import api",
		from: []string{"web/..."}, to: []string{"api/..."},
	},
	{
		name: "api answers from the domain, not from the pages or the generator: api must not import web or generator",
		from: []string{"api/..."}, to: []string{"web/...", "generator/..."},
	},
	{
		name: "the domain under internal/ knows no adapter: it must not import api, web, generator or cmd",
		from: []string{"internal/..."}, to: []string{"api/...", "web/...", "generator/...", "cmd/..."},
		except: []string{"internal/cmd/...", "internal/layers"},
	},
	{
		name: "the store implements the domain's contracts and serves no adapter: internal/postgres must not import api, web or generator",
		from: []string{"internal/postgres/..."}, to: []string{"api/...", "web/...", "generator/..."},
	},
	{
		name: "the guarded outbound client serves every package that reaches other hosts and knows none of them: internal/outbound must not import the program's other packages",
		from: []string{"internal/outbound"}, to: []string{"..."},
	},
	{
		name: "search and origin submissions take from one rate limiter, internal/ratelimit, and neither borrows from the other: internal/origin must not import internal/search",
		from: []string{"internal/origin/..."}, to: []string{"internal/search/..."},
	},
	{
		name: "search and origin submissions take from one rate limiter, internal/ratelimit, and neither borrows from the other: internal/search must not import internal/origin",
		from: []string{"internal/search/..."}, to: []string{"internal/origin/..."},
	},
	{
		name: "the rate limiter serves every package that limits callers and knows none of them: internal/ratelimit must not import the program's other packages",
		from: []string{"internal/ratelimit"}, to: []string{"..."},
	},
	{
		name: "a program answers its callers itself: no package but a test's may import net/http/httptest (an adapter that serves another through a recorder re-enters the router instead of calling the service)",
		from: []string{"..."}, to: []string{"std:net/http/httptest"},
	},
	{
		name: "adapters reach use cases through the domain's services: api, web and generator must not import the engines and chores behind them (internal/embedding, internal/periodic)",
		from: []string{"api/...", "web/...", "generator/..."}, to: []string{"internal/embedding/...", "internal/periodic"},
		direct: true,
	},
	{
		name: "adapters serve the product, not its tools: api, web and generator must not depend on the sealing keys' vault, the stand-in model, the local seller, the search evaluation or test helpers",
		from: []string{"api/...", "web/...", "generator/..."},
		to:   []string{"internal/vault", "internal/llmecho", "internal/seller", "internal/search/eval", "internal/cmd/...", "internal/auth/passkeytest", "internal/redact/redacttest", "internal/postgres/pgtest"},
	},
}

func matches(pkg string, patterns []string) bool {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	for _, p := range patterns {
		if std, isStd := strings.CutPrefix(p, "std:"); isStd {
			if pkg == std {
				return true
			}
			continue
		}
		if !ok {
			continue
		}
		switch {
		case p == "...":
			return true
		case strings.HasSuffix(p, "/..."):
			base := strings.TrimSuffix(p, "/...")
			if rel == base || strings.HasPrefix(rel, base+"/") {
				return true
			}
		case rel == p:
			return true
		}
	}
	return false
}

// TestLayersImportOnlyWhatTheirRulesAllow reads the import graph of every package
// (go list -deps, tests left out) and fails on each edge a rule forbids, naming the
// rule.
func TestLayersImportOnlyWhatTheirRulesAllow(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}} |{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = filepath.Clean(strings.TrimSpace(string(root)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	packages := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		all, direct, _ := strings.Cut(line, " |")
		fields := strings.Fields(all)
		pkg := fields[0]
		packages++
		for _, r := range rules {
			if !matches(pkg, r.from) || matches(pkg, r.except) {
				continue
			}
			deps := fields[1:]
			if r.direct {
				deps = strings.Fields(direct)
			}
			for _, d := range deps {
				if matches(d, r.to) {
					t.Errorf("%s depends on %s, which breaks a layer rule: %s", pkg, d, r.name)
				}
			}
		}
	}
	if packages < 10 {
		t.Fatalf("read %d packages: the import graph looks incomplete", packages)
	}
}
