package redact

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realistic are values as people save them: a card, a password, a date of birth, a
// phone number and an email address.
var realistic = []string{"4111111111111111", "hunter2-Zebra!", "1990-04-17", "+1 415 555 0134", "ada@example.com"}

// repoRoot is the directory of go.mod above the test's.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// TestOrdinaryTextMatchesNothing: a few hundred KB of prose and of JSON (a
// marketplace's listings: descriptions, hex addresses, amounts, dates, URLs, and
// prose made here) hold none of the realistic values in any form the scanner
// folds, decodes or interleaves. The listings are read where the project's shared
// data lies beside the repository; without them the test is skipped, except in CI.
func TestOrdinaryTextMatchesNothing(t *testing.T) {
	s := New(realistic)
	texts := map[string]string{"prose": prose(256 << 10)}
	if b, err := json.Marshal(map[string]any{"messages": strings.Fields(prose(64 << 10))}); err == nil {
		texts["json of prose"] = string(b)
	}
	path := filepath.Join(repoRoot(t), "..", "shared", "data", "bazaar-2026-08.jsonl")
	f, err := os.Open(path)
	switch {
	case err == nil:
		defer f.Close()
		var lines, descriptions strings.Builder
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines.WriteString(sc.Text() + "\n")
			var item struct {
				Description string `json:"description"`
			}
			if json.Unmarshal(sc.Bytes(), &item) == nil {
				descriptions.WriteString(item.Description + "\n")
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		texts["listings"], texts["descriptions"] = lines.String(), descriptions.String()
	case os.Getenv("CI") == "true":
		t.Fatalf("the listings are missing: %v", err)
	default:
		t.Logf("the listings are missing, prose only: %v", err)
	}
	for name, text := range texts {
		for line := range strings.Lines(text) {
			if got, n := s.Redact(line); n > 0 {
				t.Errorf("%s: %q -> %q", name, line, got)
			}
		}
		if s.Contains(text) {
			t.Errorf("%s: whole, %d bytes, holds a value", name, len(text))
		}
	}
}
