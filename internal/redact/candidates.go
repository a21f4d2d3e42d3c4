package redact

import "strings"

// Candidates counts the strings of a text shaped like the values an agent may guess
// at: a text carrying thousands of card numbers or dates is a bisection attack on the
// scanner (the agent learns which half of its guesses holds the value), whatever the
// values saved, so a caller refuses it before any scan can answer.
type Candidates struct {
	// Cards are Luhn-valid runs of 12 to 19 digits, whole or in groups apart by a
	// space or a hyphen as cards are written; a run of digits too long for one card
	// counts each 16 digits of it that pass Luhn's check.
	Cards int
	// Dates are dates in the forms dateForms knows: 1990-04-17, 17/04/1990,
	// 17.04.1990, 19900417, 17 April 1990, April 17, 1990, 17 Apr 1990.
	Dates int
	// Phones are runs of 7 to 15 digits, maybe after a + and in groups apart by
	// spaces, hyphens, dots or brackets; a longer run counts as the numbers it
	// holds side by side, taken greedily, up to 15 digits each.
	Phones int
	// Emails are addresses: name@domain.tld.
	Emails int
}

// Max is the largest of the counts.
func (c Candidates) Max() int { return max(c.Cards, c.Dates, c.Phones, c.Emails) }

// CountCandidates counts the candidates in each of parts and sums the counts. It
// reads each part once, left to right, and needs no values.
func CountCandidates(parts []string) Candidates {
	var c Candidates
	var groups []group
	for _, p := range parts {
		groups = c.count(p, groups)
	}
	return c
}

// group is a run of digits of a text, text[from:to], and the separator before it (0
// for the first of a run).
type group struct {
	from, to int
	sep      byte
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (c *Candidates) count(text string, groups []group) []group {
	for i := 0; i < len(text); {
		switch ch := text[i]; {
		case isDigit(ch):
			groups = digitRun(text, i, groups[:0])
			c.cards(text, groups)
			c.dates(text, groups)
			c.phones(groups)
			i = groups[len(groups)-1].to
		case ch == '@':
			if emailAt(text, i) {
				c.Emails++
			}
			i++
		case 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z':
			j := i + 1
			for j < len(text) && ('A' <= text[j] && text[j] <= 'Z' || 'a' <= text[j] && text[j] <= 'z') {
				j++
			}
			if isMonth(text[i:j]) && wordDate(text, i, j) {
				c.Dates++
			}
			i = j
		default:
			i++
		}
	}
	return groups
}

// digitRun reads the run of digit groups at text[i:]: groups apart by one
// separator (space, hyphen, dot, slash or bracket), or a bracket and a space.
func digitRun(text string, i int, groups []group) []group {
	var sep byte
	for {
		j := i
		for j < len(text) && isDigit(text[j]) {
			j++
		}
		groups = append(groups, group{from: i, to: j, sep: sep})
		k := j
		for k < len(text) && k-j < 2 && strings.IndexByte(" -./()", text[k]) >= 0 {
			k++
		}
		if k == j || k == len(text) || !isDigit(text[k]) || k-j == 2 && text[j] != ')' && text[j+1] != '(' {
			return groups
		}
		sep, i = text[j], k
	}
}

// cards counts the card numbers of a run: groups apart by spaces or hyphens, taken
// from the left, each the longest that passes Luhn's check.
func (c *Candidates) cards(text string, groups []group) {
	for g := 0; g < len(groups); {
		n := groups[g].to - groups[g].from
		if n > 19 {
			for k := groups[g].from; k+16 <= groups[g].to; k += 16 {
				if luhn(text[k : k+16]) {
					c.Cards++
				}
			}
			g++
			continue
		}
		total, best := 0, 0
		var digits [19]byte
		for h := g; h < len(groups); h++ {
			if h > g && groups[h].sep != ' ' && groups[h].sep != '-' {
				break
			}
			size := groups[h].to - groups[h].from
			if total+size > 19 {
				break
			}
			copy(digits[total:], text[groups[h].from:groups[h].to])
			total += size
			if total >= 12 && luhn(digits[:total]) {
				best = h + 1
			}
		}
		if best > 0 {
			c.Cards++
			g = best
			continue
		}
		g++
	}
}

// Luhn tells whether digits, ASCII digits only, pass the Luhn check every card
// number passes.
func Luhn(digits string) bool { return luhn(digits) }

// luhn tells whether digits pass Luhn's check, as every card number does.
func luhn[T string | []byte](digits T) bool {
	sum := 0
	for i := range len(digits) {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// dates counts the numeric dates of a run: three groups apart by the same -, / or .
// (year first or last), or eight digits alone (19900417).
func (c *Candidates) dates(text string, groups []group) {
	num := func(g group) int {
		n := 0
		for k := g.from; k < g.to; k++ {
			n = n*10 + int(text[k]-'0')
		}
		return n
	}
	size := func(g group) int { return g.to - g.from }
	for g := 0; g < len(groups); g++ {
		if g+2 < len(groups) && groups[g+1].sep == groups[g+2].sep && strings.IndexByte("-/.", groups[g+1].sep) >= 0 {
			a, b, y := groups[g], groups[g+1], groups[g+2]
			switch {
			case size(a) == 4 && size(b) <= 2 && size(y) <= 2 && validDate(num(a), num(b), num(y)):
				c.Dates++
				g += 2
				continue
			case size(a) <= 2 && size(b) <= 2 && size(y) == 4 && (validDate(num(y), num(b), num(a)) || validDate(num(y), num(a), num(b))):
				c.Dates++
				g += 2
				continue
			}
		}
		if n := num(groups[g]); size(groups[g]) == 8 && validDate(n/10000, n/100%100, n%100) && n/10000 >= 1900 && n/10000 < 2100 {
			c.Dates++
		}
	}
}

func validDate(year, month, day int) bool {
	return 1000 <= year && year < 3000 && 1 <= month && month <= 12 && 1 <= day && day <= 31
}

// phones counts the phone numbers of a run: its groups taken from the left while
// they hold at most 15 digits, a number when they hold 7 or more; a group longer
// than 15 digits holds one number each 10.
func (c *Candidates) phones(groups []group) {
	total := 0
	for _, g := range groups {
		n := g.to - g.from
		if n > 15 {
			if total >= 7 {
				c.Phones++
			}
			c.Phones += n / 10
			total = 0
			continue
		}
		if total+n > 15 {
			if total >= 7 {
				c.Phones++
			}
			total = 0
		}
		total += n
	}
	if total >= 7 {
		c.Phones++
	}
}

// months are the names of the months and their first three letters, lower-cased.
var months = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range []string{"january", "february", "march", "april", "may", "june", "july",
		"august", "september", "october", "november", "december"} {
		m[name], m[name[:3]] = true, true
	}
	return m
}()

func isMonth(word string) bool {
	return len(word) >= 3 && len(word) <= 9 && months[strings.ToLower(word)]
}

// wordDate tells whether the month name text[i:j] is part of a date: "17 April
// 1990" or "April 17, 1990" (the year of four digits).
func wordDate(text string, i, j int) bool {
	digitsAt := func(k, min, max int) int { // the end of min to max digits at k, or -1
		e := k
		for e < len(text) && isDigit(text[e]) && e-k < max {
			e++
		}
		if e-k < min || e < len(text) && isDigit(text[e]) {
			return -1
		}
		return e
	}
	// 17 April 1990: a day before, a year after.
	if i >= 2 && text[i-1] == ' ' && isDigit(text[i-2]) {
		k := i - 2
		for k > 0 && isDigit(text[k-1]) && i-1-k < 2 {
			k--
		}
		if (k == 0 || !isDigit(text[k-1])) && j < len(text) && text[j] == ' ' && digitsAt(j+1, 4, 4) > 0 {
			return true
		}
	}
	// April 17, 1990 or April 17 1990.
	if j < len(text) && text[j] == ' ' {
		if e := digitsAt(j+1, 1, 2); e > 0 {
			if e < len(text) && text[e] == ',' {
				e++
			}
			return e < len(text) && text[e] == ' ' && digitsAt(e+1, 4, 4) > 0
		}
	}
	return false
}

// emailAt tells whether the @ at text[i] joins a name and a domain with a dot and a
// last label of two letters or more.
func emailAt(text string, i int) bool {
	if i == 0 || !isLocal(text[i-1]) {
		return false
	}
	j, dot, label := i+1, false, 0
	for ; j < len(text); j++ {
		switch ch := text[j]; {
		case ch == '.':
			dot, label = true, 0
		case 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z':
			label++
		case isDigit(ch) || ch == '-':
			label = -len(text) // a last label of letters only
		default:
			return dot && label >= 2
		}
		if ch := text[j]; ch == '.' && j+1 < len(text) && text[j+1] == '.' {
			return false
		}
	}
	return dot && label >= 2
}

func isLocal(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || isDigit(c) || strings.IndexByte("._%+-", c) >= 0
}
