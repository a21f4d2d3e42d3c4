package search

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/waystation/waystation/internal/directory"
)

// Near-duplicates are one answer. A real listing is mostly a few hundred hosts that
// list dozens of near-identical endpoints (one per region, per country, per
// parameter baked into the path), and APIs resold by several sellers under the same
// text. Three methods in a group would crowd out the answer a caller needs next, and
// a band that reads how far the nearest method leads the next would read a lead over
// its own twin. So methods that do the same thing form a group, and a ranking holds
// one method of each: the one the query ranks first, or, of those it ranks about as
// high (within faceSlack), the one most trusted, then most in demand.
//
// Two methods are in one group when (the relation is closed transitively):
//   - their descriptions are the same words (case, punctuation and numbers aside),
//     at least minGroupWords of them, whatever their hosts: the same API resold;
//   - on one host, their descriptions begin with the same three words and share
//     at least groupOverlap of their distinct words: templated endpoints;
//   - on one host, one's name is the other's with one more word, of two words at
//     least: a variant of one method ("Unit convert", "Unit convert v2").
const (
	minGroupWords = 5
	groupOverlap  = 0.8
	faceSlack     = 0.01
	// MaxSimilar is the most near-duplicates an answer names by slug for one result;
	// it counts them all.
	MaxSimilar = 20
)

// groups holds a snapshot's near-duplicate groups: each method's group (by list
// position; -1 for a method in none) and each group's members, in list order.
type groups struct {
	of      []int32
	members [][]int32
}

// newGroups finds the groups of the methods ms (by list position).
func newGroups(ms []directory.Method) groups {
	parent := make([]int32, len(ms))
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	join := func(a, b int32) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	same := map[string]int32{}
	type templated struct {
		pos   int32
		words map[string]bool
	}
	byLead := map[string][]templated{}
	byName := map[string]int32{}
	for p, m := range ms {
		pos := int32(p)
		ws := groupWords(m.Description)
		if len(ws) >= minGroupWords {
			key := strings.Join(ws, " ")
			if q, ok := same[key]; ok {
				join(q, pos)
			} else {
				same[key] = pos
			}
			set := make(map[string]bool, len(ws))
			for _, w := range ws {
				set[w] = true
			}
			lead := m.Hostname + "\x00" + strings.Join(ws[:3], " ")
			for _, t := range byLead[lead] {
				if overlap(set, t.words) >= groupOverlap {
					join(t.pos, pos)
				}
			}
			byLead[lead] = append(byLead[lead], templated{pos, set})
		}
		if name := groupWords(m.Name); len(name) >= 2 {
			byName[m.Hostname+"\x00"+strings.Join(name, " ")] = pos
		}
	}
	for p, m := range ms {
		name := groupWords(m.Name)
		if len(name) < 3 {
			continue
		}
		if q, ok := byName[m.Hostname+"\x00"+strings.Join(name[:len(name)-1], " ")]; ok {
			join(q, int32(p))
		}
	}
	g := groups{of: make([]int32, len(ms))}
	index := map[int32]int32{}
	size := map[int32]int{}
	for p := range ms {
		size[find(int32(p))]++
	}
	for p := range ms {
		r := find(int32(p))
		if size[r] < 2 {
			g.of[p] = -1
			continue
		}
		id, ok := index[r]
		if !ok {
			id = int32(len(g.members))
			index[r] = id
			g.members = append(g.members, nil)
		}
		g.of[p] = id
		g.members[id] = append(g.members[id], int32(p))
	}
	return g
}

// groupWords are the words of s as grouping reads them: lower-cased runs of letters
// and digits, each run of digits in them one "#" ("v2", "v#"; "2021", "#").
func groupWords(s string) []string {
	var out []string
	var b strings.Builder
	digits := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			b.WriteRune(unicode.ToLower(r))
			digits = false
		case unicode.IsDigit(r):
			if !digits {
				b.WriteByte('#')
			}
			digits = true
		default:
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
			digits = false
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// overlap is the Jaccard index of two sets of words.
func overlap(a, b map[string]bool) float64 {
	both := 0
	for w := range a {
		if b[w] {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}

// Collapse keeps, of each group's methods in near (in the ranking's order), one: of
// those ranked within faceSlack of the group's first, the most trusted, then the
// most in demand, then the first; the others leave the ranking, and the methods of
// no group stay as they are.
func (x *textIndex) Collapse(near []Neighbour) []Neighbour {
	g := x.groups
	if len(g.members) == 0 || len(near) < 2 {
		return near
	}
	seen := map[int32]bool{}
	out := make([]Neighbour, 0, len(near))
	for i, n := range near {
		p := x.position(n.Slug)
		if p < 0 || g.of[p] < 0 {
			out = append(out, n)
			continue
		}
		id := g.of[p]
		if seen[id] {
			continue
		}
		seen[id] = true
		face := n
		for _, o := range near[i+1:] {
			if o.score() < n.score()-faceSlack {
				break
			}
			if q := x.position(o.Slug); q >= 0 && g.of[q] == id && x.preferred(q, x.position(face.Slug)) {
				face = o
			}
		}
		out = append(out, face)
	}
	return out
}

// preferred tells whether the method at p makes a better face for its group than
// the one at q: more trusted, then more in demand (directory.Method.Use: the 30-day
// payers the listing reports and the organic payers the service itself settled with,
// then the listing's calls).
func (x *textIndex) preferred(p, q int) bool {
	ms := x.snap.Methods()
	a, b := &ms[p], &ms[q]
	if c := cmp.Compare(trustScore(a), trustScore(b)); c != 0 {
		return c > 0
	}
	ap, ac := a.Use()
	bp, bc := b.Use()
	if ap != bp {
		return ap > bp
	}
	return ac > bc
}

func trustScore(m *directory.Method) int {
	if m.Trust.Score == nil {
		return -1
	}
	return *m.Trust.Score
}

// similar are the list positions of the other methods of pos's group that f
// allows: the most trusted first, then the most in demand, then in list order.
func (x *textIndex) similar(pos int, snap *directory.Snapshot, f directory.Filter) []int {
	g := x.groups
	if pos >= len(g.of) || g.of[pos] < 0 {
		return nil
	}
	var out []int
	for _, p := range g.members[g.of[pos]] {
		if int(p) != pos && snap.Allows(f, int(p)) {
			out = append(out, int(p))
		}
	}
	slices.SortStableFunc(out, func(a, b int) int {
		switch {
		case x.preferred(a, b):
			return -1
		case x.preferred(b, a):
			return 1
		}
		return 0
	})
	return out
}

// twins are the list positions of the methods of pos's group, pos among them: pos
// alone for a method in none.
func (x *textIndex) twins(pos int) []int {
	g := x.groups
	if pos < 0 || pos >= len(g.of) || g.of[pos] < 0 {
		return []int{pos}
	}
	out := make([]int, len(g.members[g.of[pos]]))
	for i, p := range g.members[g.of[pos]] {
		out[i] = int(p)
	}
	return out
}

// Twins are the slugs of the methods of slug's group in snap, slug among them: one
// answer, whichever of them is its face. A method in none is its own.
func (e *Engine) Twins(snap *directory.Snapshot, slug string) []string {
	p, ok := snap.Position(slug)
	if !ok {
		return []string{slug}
	}
	var out []string
	for _, q := range e.textIndex(snap).twins(p) {
		out = append(out, snap.Methods()[q].Slug)
	}
	return out
}

// group names the near-duplicate group of the method slug: the group's number, or
// the slug itself for a method in none (Fusion.Fuse).
func (x *textIndex) group(slug string) string {
	if p := x.position(slug); p >= 0 && x.groups.of[p] >= 0 {
		return "#" + strconv.Itoa(int(x.groups.of[p]))
	}
	return slug
}

// Fuse is f's answer over the readings rs of one query's phrasings in snap, at most
// max, each group of near-duplicates one answer.
func (e *Engine) Fuse(snap *directory.Snapshot, f Fusion, rs []Reading, max int) Fused {
	return f.Fuse(rs, max, e.textIndex(snap).group)
}
