package api

import (
	"testing"

	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/catalog"
)

// TestGuidanceNamesOnlyRoutesTheAPIHas walks every demo method's guidance, where
// agents read how to call and pay, and fails on a route the OpenAPI document lacks:
// guidance must never send an agent to a 404.
func TestGuidanceNamesOnlyRoutesTheAPIHas(t *testing.T) {
	t.Parallel()
	paths := openapitest.Paths(t, "openapi.json")
	cat, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	mentions := 0
	for _, p := range cat.Providers {
		for _, m := range p.Methods {
			n, missing := openapitest.UndocumentedRoutes(paths, BasePath, string(m.Guidance))
			mentions += n
			for _, r := range missing {
				t.Errorf("%s: guidance names %s, which the API does not have", m.Slug, r)
			}
		}
	}
	if mentions == 0 {
		t.Fatal("no guidance names a route: the walk found nothing to check")
	}
}
