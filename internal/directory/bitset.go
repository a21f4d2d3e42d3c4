package directory

import "math/bits"

// bitset is a set of method positions in list order. The index keeps one per
// category, verdict, kind and payable value, so a filter is a few word-wise ANDs and
// ORs and a facet count is a popcount.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int) { b[i/64] |= 1 << (uint(i) % 64) }

// and keeps in b only the positions also in o.
func (b bitset) and(o bitset) {
	for i := range b {
		b[i] &= o[i]
	}
}

// or adds the positions of o to b.
func (b bitset) or(o bitset) {
	for i := range b {
		b[i] |= o[i]
	}
}

func (b bitset) fill(n int) {
	for i := range b {
		b[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		b[len(b)-1] = 1<<uint(r) - 1
	}
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// countAnd counts the positions in both b and o without allocating.
func (b bitset) countAnd(o bitset) int {
	n := 0
	for i, w := range b {
		n += bits.OnesCount64(w & o[i])
	}
	return n
}

// each calls fn for every position in order until fn returns false.
func (b bitset) each(fn func(int) bool) {
	for i, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			if !fn(i*64 + t) {
				return
			}
			w &= w - 1
		}
	}
}
