package postgres

import (
	"strconv"
	"testing"
)

// BenchmarkWakeOneSessionAmongMany: an event wakes its session's waiters by key, at
// the same cost however many other sessions wait.
func BenchmarkWakeOneSessionAmongMany(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			l := &Listener{waiters: map[string]map[chan struct{}]struct{}{}}
			for i := range n {
				l.Subscribe("s" + strconv.Itoa(i))
			}
			ch, _ := l.Subscribe("target")
			for b.Loop() {
				l.wake("target")
				<-ch
			}
		})
	}
}

func TestWakeReachesOnlyTheSession(t *testing.T) {
	l := &Listener{waiters: map[string]map[chan struct{}]struct{}{}}
	a, _ := l.Subscribe("a")
	bch, cancel := l.Subscribe("b")
	l.wake("a")
	select {
	case <-a:
	default:
		t.Fatal("the session's waiter was not woken")
	}
	select {
	case <-bch:
		t.Fatal("another session's waiter was woken")
	default:
	}
	cancel()
	if _, ok := l.waiters["b"]; ok {
		t.Fatal("an unsubscribed session stays in the map")
	}
	l.wake("")
	select {
	case <-a:
	default:
		t.Fatal("a wake of every session missed one")
	}
}
