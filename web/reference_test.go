package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// The API reference page and /llms.txt are rendered from the OpenAPI document: every
// operation is on the page, every path in llms.txt, and the home page links both.
func TestReferenceAndLLMsTxtCoverEveryOperationOfTheDocument(t *testing.T) {
	doc, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseReference(doc, "/functions/v1/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	json.Unmarshal(doc, &d)
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil, WithReference(ref))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	if doc := get("/docs/openapi.json"); doc.Code != http.StatusMovedPermanently || doc.Header().Get("Location") != "/functions/v1/api/openapi.json" {
		t.Errorf("/docs/openapi.json: %d to %q", doc.Code, doc.Header().Get("Location"))
	}
	page := get("/docs/api")
	llms := get("/llms.txt")
	if page.Code != 200 || llms.Code != 200 || !strings.HasPrefix(llms.Header().Get("Content-Type"), "text/markdown") {
		t.Fatalf("/docs/api %d, /llms.txt %d %s", page.Code, llms.Code, llms.Header().Get("Content-Type"))
	}
	ops := 0
	for path, item := range d.Paths {
		for method, op := range item {
			if method == "head" || method == "parameters" || method == "servers" {
				continue
			}
			base := "/functions/v1/api"
			if _, rooted := item["servers"]; rooted {
				base = ""
			}
			ops++
			if !strings.Contains(page.Body.String(), `id="`+op.OperationID+`"`) {
				t.Errorf("the page lacks %s %s", method, path)
			}
			if !strings.Contains(llms.Body.String(), "- ["+strings.ToUpper(method)+" "+base+path+"](/docs/api#"+op.OperationID+"): ") {
				t.Errorf("llms.txt lacks %s %s as a link to its place on the reference page", method, path)
			}
		}
	}
	// Every entry of llms.txt but its rules is a Markdown link, as the llms.txt
	// proposal has them.
	section := ""
	for line := range strings.SplitSeq(llms.Body.String(), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
		}
		if strings.HasPrefix(line, "- ") && section != "Rules" && !strings.HasPrefix(line, "- [") {
			t.Errorf("llms.txt (%s): an entry that is no link: %s", section, line)
		}
	}
	if n := strings.Count(page.Body.String(), `class="operation"`); n != ops || ops < 50 {
		t.Errorf("%d operations on the page, %d in the document", n, ops)
	}
	if strings.Contains(page.Body.String(), "<script") {
		t.Error("the page needs a script")
	}
	for _, want := range []string{"/functions/v1/api/mcp", "/functions/v1/api/openapi.json", "materialize"} {
		if !strings.Contains(llms.Body.String(), want) {
			t.Errorf("llms.txt says nothing of %s", want)
		}
	}
	home := get("/")
	if !strings.Contains(home.Body.String(), `href="/docs/api"`) || !strings.Contains(home.Body.String(), `href="/llms.txt"`) {
		t.Error("the home page links neither the reference nor llms.txt")
	}
	if r := get("/docs/api?x=1"); r.Code != http.StatusMovedPermanently {
		t.Errorf("a query on the reference: %d", r.Code)
	}
}
