package openapitest

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Paths reads the document at path as its paths: path template, then lower-case
// method, then the operation.
func Paths(t testing.TB, path string) map[string]map[string]json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Paths
}

// routeMention is a route of the API named in prose: a method and a path of ours,
// relative to the base path or under it (a seller's own URLs are absolute).
var routeMention = regexp.MustCompile(`\b(GET|HEAD|POST|PUT|PATCH|DELETE) (/[^\s"'),;]*)`)

// UndocumentedRoutes finds the routes named in text ("POST /sessions/{id}/requests")
// and returns how many it found and those the paths lack, so that prose such as a
// method's guidance never sends an agent to a 404.
func UndocumentedRoutes(paths map[string]map[string]json.RawMessage, base, text string) (found int, missing []string) {
	for _, hit := range routeMention.FindAllStringSubmatch(text, -1) {
		found++
		path := strings.TrimPrefix(strings.TrimSuffix(hit[2], "."), base)
		if _, ok := paths[path][strings.ToLower(hit[1])]; !ok {
			missing = append(missing, hit[1]+" "+path)
		}
	}
	return found, missing
}
