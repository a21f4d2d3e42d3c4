package api

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/catalog"
)

// routeMention is a route of this API named in prose: a method and a path of ours
// (relative; a seller's own URLs are absolute).
var routeMention = regexp.MustCompile(`\b(GET|HEAD|POST|PUT|PATCH|DELETE) (/[^\s"'),;]*)`)

// TestGuidanceNamesOnlyRoutesTheAPIHas walks every demo method's guidance, where
// agents read how to call and pay, and fails on a route the OpenAPI document lacks:
// guidance must never send an agent to a 404.
func TestGuidanceNamesOnlyRoutesTheAPIHas(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	mentions := 0
	for _, p := range cat.Providers {
		for _, m := range p.Methods {
			for _, hit := range routeMention.FindAllStringSubmatch(string(m.Guidance), -1) {
				mentions++
				method, path := strings.ToLower(hit[1]), strings.TrimSuffix(hit[2], ".")
				path = strings.TrimPrefix(path, BasePath)
				if _, ok := doc.Paths[path][method]; !ok {
					t.Errorf("%s: guidance names %s %s, which the API does not have", m.Slug, strings.ToUpper(method), path)
				}
			}
		}
	}
	if mentions == 0 {
		t.Fatal("no guidance names a route: the walk found nothing to check")
	}
}
