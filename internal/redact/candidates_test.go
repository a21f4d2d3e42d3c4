package redact

import (
	"fmt"
	"strings"
	"testing"
)

func TestCountCandidatesCountsEachShape(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Candidates
	}{
		{"card 4111111111111111 please", Candidates{Cards: 1, Phones: 1}},
		{"card 4111 1111 1111 1111.", Candidates{Cards: 1, Phones: 1}},
		{"card 4111-1111-1111-1111, exp 12/29", Candidates{Cards: 1, Phones: 1}},
		{"amex 3782 822463 10005 and 4242424242424242", Candidates{Cards: 2, Phones: 2}},
		{"not a card 4111111111111112", Candidates{Phones: 1}},
		{"born 1990-04-17, 17/04/1990, 04/17/1990, 17.04.1990 and 19900417", Candidates{Dates: 5, Phones: 5}},
		{"born 17 April 1990, April 17, 1990, 17 Apr 1990 or Apr 17 1990", Candidates{Dates: 4}},
		{"call +1 415 555 0134 or (020) 7946-0958", Candidates{Phones: 2}},
		{"mail ada@example.com or Ada.Lovelace+x@mail.example.co.uk, not a@b or @x.com", Candidates{Emails: 2}},
		{"at 2026-08-07T00:00:00Z the 3 of 12 items cost 1.5 each", Candidates{Dates: 1, Phones: 1}},
		{"The quick brown fox may jump over 12 dogs in March.", Candidates{}},
		{"", Candidates{}},
	} {
		if got := CountCandidates([]string{c.in}); got != c.want {
			t.Errorf("%q: %+v, want %+v", c.in, got, c.want)
		}
	}
	if got := CountCandidates([]string{"4111111111111111", "ada@example.com", "1990-04-17"}); got.Cards != 1 || got.Emails != 1 || got.Dates != 1 || got.Max() != 2 {
		t.Errorf("parts: %+v, max %d", got, got.Max())
	}
}

// guesses are n Luhn-valid 16-digit numbers of the BIN 411111 ending in 1111, the
// candidates an agent that knows what a checkout page shows builds, side by side.
func guesses(n int, sep string) string {
	var b strings.Builder
	for i := range n {
		body := fmt.Sprintf("411111%06d111", i)
		for d := range 10 {
			if luhn(body + fmt.Sprint(d)) {
				b.WriteString(body + fmt.Sprint(d) + sep)
				break
			}
		}
	}
	return b.String()
}

// TestCountCandidatesCountsPackedGuesses: the 55,000 guesses of the bisection attack,
// apart by spaces, commas, newlines or nothing, count as about that many cards.
func TestCountCandidatesCountsPackedGuesses(t *testing.T) {
	for _, sep := range []string{" ", ",", "\n", "", `","`} {
		text := guesses(55000, sep)
		if got := CountCandidates([]string{text}); got.Cards != 55000 {
			t.Errorf("apart by %q: %+v", sep, got)
		}
	}
}

// BenchmarkCountCandidates counts the 55,000 guesses of the attack in one text of
// about 1 MiB.
func BenchmarkCountCandidates(b *testing.B) {
	text := guesses(55000, " ")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if CountCandidates([]string{text}).Cards != 55000 {
			b.Fatal("miscounted")
		}
	}
}
