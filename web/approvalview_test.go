package web

import (
	"testing"

	"github.com/waystation/waystation/internal/request"
)

// A request's page names every status the API can answer, each in words of its own:
// a page that said "Approved" for a fulfilled request seemed to disagree with the
// agent's answer.
func TestEveryRequestStatusHasALabelOfItsOwn(t *testing.T) {
	seen := map[string]string{}
	for _, status := range request.Statuses {
		words, ok := statusWords[status]
		if !ok || words[0] == "" || words[1] == "" {
			t.Errorf("%s: no words", status)
			continue
		}
		if other, ok := seen[words[0]]; ok {
			t.Errorf("%s and %s are both %q", other, status, words[0])
		}
		seen[words[0]] = status
	}
	if statusWords[request.StatusFulfilled][0] != "Fulfilled" {
		t.Errorf("fulfilled reads %q", statusWords[request.StatusFulfilled][0])
	}
}

// A wait of one second is said in the singular.
func TestSecondsTextSaysOneSecond(t *testing.T) {
	for n, want := range map[int]string{1: "1 second", 2: "2 seconds", 60: "60 seconds"} {
		if got := secondsText(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
