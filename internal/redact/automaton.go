package redact

import "sort"

// automaton is an Aho–Corasick automaton over bytes: it finds every occurrence of
// every pattern, overlapping ones included, in one pass over a text. Edges are kept
// sparse (a projection uses few distinct bytes), so a set of many values stays small.
type automaton struct {
	states []state
	// root is the root's transitions, dense: most bytes of a text leave the root.
	root [256]int32
}

type state struct {
	bytes []byte  // edge labels, sorted
	next  []int32 // edge targets
	fail  int32
	// out lists the lengths of the patterns that end here, those of its failure
	// chain included.
	out []int32
}

func (s *state) edge(c byte) int32 {
	for i, b := range s.bytes { // edge lists are short: a scan beats a search
		if b == c {
			return s.next[i]
		}
	}
	return -1
}

func (a *automaton) add(from int32, c byte) int32 {
	a.states = append(a.states, state{})
	to := int32(len(a.states) - 1)
	s := &a.states[from]
	i := sort.Search(len(s.bytes), func(i int) bool { return s.bytes[i] >= c })
	s.bytes = append(s.bytes, 0)
	s.next = append(s.next, 0)
	copy(s.bytes[i+1:], s.bytes[i:])
	copy(s.next[i+1:], s.next[i:])
	s.bytes[i], s.next[i] = c, to
	return to
}

func build(patterns []string) *automaton {
	a := &automaton{states: make([]state, 1)}
	for _, p := range patterns {
		s := int32(0)
		for i := 0; i < len(p); i++ {
			t := a.states[s].edge(p[i])
			if t < 0 {
				t = a.add(s, p[i])
			}
			s = t
		}
		a.states[s].out = append(a.states[s].out, int32(len(p)))
	}
	for c := range 256 {
		a.root[c] = max(a.states[0].edge(byte(c)), 0)
	}
	// Failure links, breadth first.
	queue := make([]int32, 0, len(a.states))
	queue = append(queue, a.states[0].next...)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		st := a.states[s]
		for i, c := range st.bytes {
			t := st.next[i]
			a.states[t].fail = a.step(st.fail, c, s == 0)
			a.states[t].out = append(a.states[t].out, a.states[a.states[t].fail].out...)
			queue = append(queue, t)
		}
	}
	return a
}

// step is the state after reading c in state s, following failure links; atRoot
// says s is the parent being the root, whose children fail to the root.
func (a *automaton) step(s int32, c byte, atRoot bool) int32 {
	if atRoot {
		return 0
	}
	for s != 0 {
		if t := a.states[s].edge(c); t >= 0 {
			return t
		}
		s = a.states[s].fail
	}
	return a.root[c]
}

// each calls found with the start and end of every occurrence in text.
func (a *automaton) each(text string, found func(start, end int)) {
	s := int32(0)
	for i := 0; i < len(text); i++ {
		s = a.step(s, text[i], false)
		for _, n := range a.states[s].out {
			found(i+1-int(n), i+1)
		}
	}
}
