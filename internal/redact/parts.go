package redact

import "strings"

// ContainsParts tells whether any of parts, or their concatenation, holds a value.
func (s *Set) ContainsParts(parts []string) bool {
	for _, p := range parts {
		if s.Contains(p) {
			return true
		}
	}
	return len(parts) > 1 && s.Contains(strings.Join(parts, ""))
}

// Candidates counts strings of a protected value's shapes.
type Candidates struct{ Cards, Dates, Phones, Emails int }

// Max is the largest count.
func (c Candidates) Max() int { return max(c.Cards, c.Dates, c.Phones, c.Emails) }

// CountCandidates counts Luhn-valid runs of 12 to 19 digits in parts.
func CountCandidates(parts []string) Candidates {
	var c Candidates
	for _, p := range parts {
		run := make([]byte, 0, 19)
		flush := func() {
			if len(run) >= 12 && len(run) <= 19 && luhn(run) {
				c.Cards++
			}
			run = run[:0]
		}
		for i := 0; i < len(p); i++ {
			switch ch := p[i]; {
			case ch >= '0' && ch <= '9':
				run = append(run, ch)
			case (ch == ' ' || ch == '-') && len(run) > 0:
			default:
				flush()
			}
		}
		flush()
	}
	return c
}

func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		n := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			if n *= 2; n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}
