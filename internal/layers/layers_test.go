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
// directly or through others, on the packages matching to.
type rule struct {
	name     string
	from, to []string
	except   []string
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
}

func matches(pkg string, patterns []string) bool {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return false
	}
	for _, p := range patterns {
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
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...")
	cmd.Dir = filepath.Clean(strings.TrimSpace(string(root)))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	packages := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		packages++
		for _, r := range rules {
			if !matches(pkg, r.from) || matches(pkg, r.except) {
				continue
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
