package web

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/a-h/templ"
)

var update = flag.Bool("update", false, "rewrite the golden pages under testdata/")

// TestPagesMatchTheirGoldenFiles pins the HTML of each kind of page; after an intended
// change, refresh the files with go test ./web -run Golden -update and read the diff.
func TestPagesMatchTheirGoldenFiles(t *testing.T) {
	snap := testSnapshot(t)
	home := testViews.Home(snap)
	category, _ := testViews.Category(snap, "blockchain")
	method, _ := testViews.MethodPage(snap, "tide-block-number")
	overridden, _ := testViews.MethodPage(snap, "rain-forecast")
	merchant, _ := testViews.MerchantPage(snap, "api.tide.example")
	problem, _ := testViews.ProblemPage(snap, "verified-reserved")
	search := testViews.SearchPage(snap, "block", &SearchResult{Match: "semantic", Slugs: []string{"tide-block-number"}}, "")
	alsoNear := testViews.SearchPage(snap, "block height", &SearchResult{Match: "semantic", Slugs: []string{"tide-block-number"}, Nearest: []string{"quiet-thing"}}, "")
	nearest := testViews.SearchPage(snap, "weather on mars", &SearchResult{Match: "none", Nearest: []string{"rain-forecast", "quiet-thing"}}, "")
	for name, c := range map[string]templ.Component{
		"home.html":             HomePage(home),
		"category.html":         CategoryPage(category),
		"method.html":           MethodPageView(method),
		"method-override.html":  MethodPageView(overridden),
		"merchant.html":         MerchantPageView(merchant),
		"problem.html":          ProblemPageView(problem),
		"search.html":           SearchPageView(search),
		"search-also-near.html": SearchPageView(alsoNear),
		"search-nearest.html":   SearchPageView(nearest),
	} {
		res, err := render(c)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			os.MkdirAll("testdata", 0o755)
			if err := os.WriteFile(path, res.Body, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if string(want) != string(res.Body) {
			t.Errorf("%s differs from its golden file; if intended, run go test ./web -run Golden -update", name)
		}
	}
}
