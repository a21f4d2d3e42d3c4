package trust

import (
	"net"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"github.com/waystation/waystation/internal/directory"
)

// Look-alike rule constants; the rule is written on Lookalikes.
const (
	// EstablishedAfter is how long a seller must have been listed before another
	// was, for its names to be guarded against that other.
	EstablishedAfter = Window
	// LookalikeCap is the highest score of a look-alike while its flag stands:
	// caution at best, as for a payee that changed.
	LookalikeCap = CautionCap
	// MaxResemblances is how many established sellers a look-alike names at most.
	MaxResemblances = 10
)

// Bounds of the signals, in characters of a name's skeleton (see fold): names
// shorter than these are too common to tell an impostor by.
const (
	minConfusable = 3 // a registrable or provider name read as another's
	minNear       = 5 // a registrable name one edit from another's
	minNearTwo    = 9 // ... or two
	minBrand      = 5 // a registrable name found inside another hostname
)

// Seller is what the look-alike rule reads of one hostname.
type Seller struct {
	Hostname  string
	Providers []string
	// Listed is when the hostname was first listed; zero when unknown, and then the
	// seller neither guards its names nor is held to another's.
	Listed time.Time
	// Verdict is the hostname's verdict before look-alikes are weighed (an
	// override's when one is in force).
	Verdict string
	// Payees are the payees proven to own the origins that list its methods (see
	// OwnerOf).
	Payees []string
	// Overridden: an operator's override is in force on the hostname.
	Overridden bool
}

// Lookalikes flags, by hostname, the sellers that resemble an established one.
//
// The rule: a seller is established against another when its verdict is proceed and
// it was listed at least EstablishedAfter (seven days) before the other was. Sellers
// on one registrable domain (api.x.example and geo.x.example, or two ports of one
// hostname) are neighbours, one owner by the DNS itself, and never flagged for each
// other. A seller resembles an established one on another registrable domain when
//
//   - confusable: their registrable names (the registrable domain less its public
//     suffix, as Unicode) or any of their provider names have one UTS #39 skeleton,
//     once case, spaces and punctuation are set aside (tіdewatch with a Cyrillic і,
//     or tidewatch.com beside tidewatch.example);
//   - near_domain: their registrable names' skeletons are one edit apart (from five
//     characters on) or two (from nine);
//   - brand_in_host: the established seller's registrable name (from five
//     characters on) stands inside one label of the other's hostname
//     (tidewatch.pay-now.example, tidewatch-x402.example), never across two.
//
// A registrable name's characters are counted less the trade's common words it
// begins or ends with (x402, 402, agent, agents, agentic; see core): x402.example,
// 402agent.example and agent402.example are no one's brand, and x-402.example or
// x402-agent-tools.example resemble none of them.
//
// The flag caps the seller's score at LookalikeCap while it stands. It is cleared
// by an operator's override on the seller, or by an owner proof: the seller and every
// seller it resembles have an origin signed by one payee that their live offers name.
// The established seller is never flagged for its younger neighbours: the rule only
// looks back.
func Lookalikes(sellers []Seller) map[string]*directory.Lookalike {
	names := make([]sellerNames, len(sellers))
	for i := range sellers {
		names[i] = namesOf(sellers[i])
	}
	// Only sellers with a proceed verdict guard their names: the others are not
	// compared with anyone.
	var guarded []int
	for j := range sellers {
		if sellers[j].Verdict == directory.VerdictProceed && !sellers[j].Listed.IsZero() {
			guarded = append(guarded, j)
		}
	}
	out := map[string]*directory.Lookalike{}
	for i := range sellers {
		s, sn := &sellers[i], &names[i]
		if s.Listed.IsZero() {
			continue
		}
		var proven, standing []directory.Resemblance
		for _, j := range guarded {
			b, bn := &sellers[j], &names[j]
			if i == j || !established(b, s) || (sn.registrable != "" && sn.registrable == bn.registrable) || s.Hostname == b.Hostname {
				continue
			}
			r, ok := resemble(sn, bn)
			if !ok {
				continue
			}
			r.Hostname = b.Hostname
			if sameOwner(s.Payees, b.Payees) {
				proven = append(proven, r)
			} else {
				standing = append(standing, r)
			}
		}
		l := &directory.Lookalike{Resembles: standing}
		switch {
		case len(proven)+len(standing) == 0:
			continue
		case s.Overridden:
			l.Resembles = append(standing, proven...)
			l.Cleared = cleared(directory.ClearedByOverride)
		case len(standing) == 0:
			l.Resembles = proven
			l.Cleared = cleared(directory.ClearedByOwnerProof)
		}
		slices.SortFunc(l.Resembles, func(a, b directory.Resemblance) int { return strings.Compare(a.Hostname, b.Hostname) })
		if len(l.Resembles) > MaxResemblances {
			l.Resembles = l.Resembles[:MaxResemblances]
		}
		out[s.Hostname] = l
	}
	return out
}

// CapLookalike records l on t and, while the flag stands, caps the score at
// LookalikeCap, the verdict following: a proceed becomes caution; an unknown (stale)
// verdict stays unknown. An override's verdict is never capped: it clears the flag.
func CapLookalike(t directory.Trust, l *directory.Lookalike) directory.Trust {
	if l == nil {
		return t
	}
	t.Lookalike = l
	if l.Cleared != nil || t.Override != nil {
		return t
	}
	if t.Score != nil && *t.Score > LookalikeCap {
		n := LookalikeCap
		t.Score = &n
	}
	if t.Verdict == directory.VerdictProceed {
		t.Verdict = directory.VerdictCaution
	}
	return t
}

func established(b, s *Seller) bool {
	return b.Verdict == directory.VerdictProceed && !b.Listed.IsZero() && !b.Listed.Add(EstablishedAfter).After(s.Listed)
}

func sameOwner(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if strings.EqualFold(x, y) {
				return true
			}
		}
	}
	return false
}

// sellerNames are a seller's names as the rule compares them: as Unicode, and as
// folded skeletons.
type sellerNames struct {
	// registrable is the registrable domain (eTLD+1), "" for an IP address or a
	// hostname that is itself a public suffix (localhost).
	registrable string
	// label is the registrable domain less its public suffix, as Unicode; skel its
	// folded skeleton, and runes that skeleton's runes, read once for every pair;
	// distinct is how many runes are left of it less the trade's common words at
	// its ends (see core): the part that can be a brand.
	label, skel string
	runes       []rune
	distinct    int
	// host is the whole hostname as Unicode, and hostLabels the folded skeleton of
	// each of its labels.
	host       string
	hostLabels []string
	// providers and providerSkels are the provider names and their skeletons.
	providers, providerSkels []string
}

func namesOf(s Seller) sellerNames {
	n := sellerNames{host: unicodeHost(s.Hostname)}
	for l := range strings.SplitSeq(n.host, ".") {
		n.hostLabels = append(n.hostLabels, fold(l))
	}
	for _, p := range s.Providers {
		if k := fold(p); len([]rune(k)) >= minConfusable {
			n.providers, n.providerSkels = append(n.providers, p), append(n.providerSkels, k)
		}
	}
	if net.ParseIP(s.Hostname) != nil {
		return n
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(s.Hostname)
	if err != nil {
		return n
	}
	suffix, _ := publicsuffix.PublicSuffix(s.Hostname)
	n.registrable = reg
	n.label = unicodeHost(strings.TrimSuffix(reg, "."+suffix))
	n.skel = fold(n.label)
	n.runes = []rune(n.skel)
	n.distinct = utf8.RuneCountInString(core(n.skel))
	return n
}

// resemble tells whether s resembles b, and how: the first signal that holds.
func resemble(s, b *sellerNames) (directory.Resemblance, bool) {
	if s.skel != "" && b.skel != "" {
		short := min(s.distinct, b.distinct)
		switch d := distance(s.runes, b.runes, 2); {
		case d == 0 && short >= minConfusable:
			return directory.Resemblance{Signal: directory.SignalConfusable, Mine: s.label, Theirs: b.label}, true
		case d == 1 && short >= minNear, d == 2 && short >= minNearTwo:
			return directory.Resemblance{Signal: directory.SignalNearDomain, Mine: s.label, Theirs: b.label}, true
		}
	}
	if b.distinct >= minBrand && slices.ContainsFunc(s.hostLabels, func(l string) bool { return strings.Contains(l, b.skel) }) {
		return directory.Resemblance{Signal: directory.SignalBrandInHost, Mine: s.host, Theirs: b.label}, true
	}
	for i, p := range s.providerSkels {
		for k, q := range b.providerSkels {
			if p == q {
				return directory.Resemblance{Signal: directory.SignalConfusable, Mine: s.providers[i], Theirs: b.providers[k]}, true
			}
		}
	}
	return directory.Resemblance{}, false
}

// commonWords are the words of the trade that sellers' names are made of (the
// protocol's name, "agent"), folded as fold folds them, longest first: no one's
// brand, so a name is compared less those it begins or ends with.
var commonWords = func() []string {
	words := []string{"agentic", "agents", "agent", "x402", "402"}
	for i, w := range words {
		words[i] = fold(w)
	}
	return words
}()

// core is a folded name less the trade's common words at its start and end, taken
// off for as long as one is there: "x402agent" and "402agent" are "", "agenttoll"
// "toll", "x402tidewatch" "tidewatch". Names are compared whole; their core's
// length is what the signals' bounds count.
func core(skel string) string {
	for {
		before := skel
		for _, w := range commonWords {
			skel = strings.TrimSuffix(strings.TrimPrefix(skel, w), w)
		}
		if skel == before {
			return skel
		}
	}
}

// unicodeHost is a hostname as Unicode, for names in punycode (xn--); as given when
// it cannot be read.
func unicodeHost(h string) string {
	if u, err := idna.ToUnicode(h); err == nil {
		return u
	}
	return h
}

// fold is a name's skeleton (UTS #39, over the Unicode confusables table) in lower
// case, letters and digits alone: "Tide-Watch" and "tіdewatch" fold alike. The
// skeleton is taken of the lower-cased name and lower-cased again, since the table
// maps some lower-case letters to capitals (0 to O).
func fold(s string) string {
	k := strings.ToLower(confusables.Skeleton(strings.ToLower(s)))
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, k)
}

// distance is the Levenshtein distance of the runes ra and rb, or limit+1 once it is
// past limit.
func distance(ra, rb []rune, limit int) int {
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	var rows [2][64]int
	prev, cur := rows[0][:], rows[1][:]
	if len(rb) >= len(rows[0]) {
		prev, cur = make([]int, len(rb)+1), make([]int, len(rb)+1)
	}
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit+1)
}

// cleared names what cleared a look-alike.
func cleared(by string) *string { return &by }
