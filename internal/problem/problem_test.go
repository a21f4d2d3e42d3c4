package problem

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEveryCodeIsExplainedOnce holds the table to what its two readers need: a status
// the API can answer, a title, and words for the person who follows the type URL.
func TestEveryCodeIsExplainedOnce(t *testing.T) {
	codes := Codes()
	if len(codes) < 20 {
		t.Fatalf("%d codes", len(codes))
	}
	for _, c := range codes {
		k, _ := Lookup(c)
		if k.Status < 400 || k.Status > 599 || http.StatusText(k.Status) == "" || k.Title == "" ||
			!strings.HasSuffix(k.Meaning, ".") || !strings.HasSuffix(k.Remedy, ".") {
			t.Errorf("%s: %+v", c, k)
		}
		if strings.Contains(c, "-") || Type(c) != "/problems/"+strings.ReplaceAll(c, "_", "-") {
			t.Errorf("%s: type %s", c, Type(c))
		}
	}
	if Status("no_such_code") != http.StatusInternalServerError {
		t.Error("an unknown code must be an internal error")
	}
}

// TestProblemsAreFoundThroughWrapping: a problem keeps its code however deep the
// error that carries it, and its cause stays reachable for the log.
func TestProblemsAreFoundThroughWrapping(t *testing.T) {
	cause := errors.New("connection refused")
	p := Wrap(DatabaseUnavailable, "The database cannot be reached.", cause)
	err := fmt.Errorf("postgres: session: %w", p)
	if CodeOf(err) != DatabaseUnavailable || !errors.Is(err, cause) {
		t.Errorf("code %q, cause found %v", CodeOf(err), errors.Is(err, cause))
	}
	if CodeOf(errors.New("plain")) != "" || CodeOf(nil) != "" {
		t.Error("a plain error has no code")
	}
}

// TestSecondsRoundsAWaitUp: a wait told in seconds is never shorter than the wait,
// so a client that honours it does not come back too soon.
func TestSecondsRoundsAWaitUp(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 0, time.Nanosecond: 1, 500 * time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, time.Hour: 3600} {
		if got := Seconds(d); got != want {
			t.Errorf("Seconds(%s) = %d, want %d", d, got, want)
		}
	}
}
