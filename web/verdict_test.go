package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

// TestVerdictExplanationsNameWhatDecided pins, in testdata/verdicts.txt, how each kind
// of verdict is explained and its score shown: an override, each score band, a stale
// probe, no probe. Refresh with go test ./web -run Verdict -update and read the diff.
func TestVerdictExplanationsNameWhatDecided(t *testing.T) {
	score := func(n int) *int { return &n }
	probe := func(hours int) *directory.Probe {
		return &directory.Probe{Outcome: trust.OutcomePaymentRequired, ProbedAt: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), AgeSeconds: int64(hours) * 3600}
	}
	override := &directory.Override{Verdict: directory.VerdictAvoid, Reason: "Charges twice.", SetAt: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}
	cases := []struct {
		name string
		t    directory.Trust
	}{
		{"override over a high score", directory.Trust{Verdict: directory.VerdictAvoid, Score: score(83), Probe: probe(2), Override: override}},
		{"proceed band", directory.Trust{Verdict: directory.VerdictProceed, Score: score(91), Probe: probe(2)}},
		{"caution band", directory.Trust{Verdict: directory.VerdictCaution, Score: score(67), Probe: probe(2)}},
		{"avoid band", directory.Trust{Verdict: directory.VerdictAvoid, Score: score(12), Probe: probe(2)}},
		{"stale", directory.Trust{Verdict: directory.VerdictUnknown, Score: score(90), Probe: probe(100)}},
		{"never probed", directory.Trust{Verdict: directory.VerdictUnknown, NotYetProbed: true}},
	}
	var b strings.Builder
	for _, c := range cases {
		b.WriteString("## " + c.name + "\n" + verdictReason(c.t) + "\nscore: " + scoreText(c.t, true) + " | row: " + scoreText(c.t, false) + "\n\n")
	}
	path := filepath.Join("testdata", "verdicts.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != b.String() {
		t.Errorf("the verdict explanations changed; if intended, run go test ./web -run Verdict -update\n%s", b.String())
	}
	// What the old pages got wrong: a score rule beside an override, a fresh-looking stale score.
	got := b.String()
	for _, wrong := range []string{"under 40). An operator", "83 out of 100, is in", "stale: 90/100"} {
		if strings.Contains(got, wrong) {
			t.Errorf("an explanation says %q", wrong)
		}
	}
}

// TestBestTrustedOrdersByVerdictThenScore: avoid (83) and unknown (90) come after
// caution (67).
func TestBestTrustedOrdersByVerdictThenScore(t *testing.T) {
	n := func(v string, s int) directory.Method {
		return directory.Method{Slug: v, Trust: directory.Trust{Verdict: v, Score: &s}}
	}
	methods := []directory.Method{n("unknown", 90), n("avoid", 83), n("proceed", 71), n("caution", 67)}
	var got []string
	for _, p := range bestTrusted(methods, []int{0, 1, 2, 3}) {
		got = append(got, methods[p].Slug)
	}
	if strings.Join(got, ",") != "proceed,caution,unknown,avoid" {
		t.Errorf("order %v", got)
	}
}
