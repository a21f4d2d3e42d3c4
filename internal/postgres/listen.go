package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener wakes waiters when an event is appended to their session. It holds one
// dedicated connection that LISTENs on EventChannel, so long polls and event streams
// take no pool connection while they wait.
type Listener struct {
	cfg *pgx.ConnConfig
	log *slog.Logger

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// NewListener makes a listener on the store's database; Run starts it.
func (s *Store) NewListener(log *slog.Logger) *Listener {
	return &Listener{cfg: s.pool.Config().ConnConfig.Copy(), log: log, waiters: map[string]map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a value (coalesced) whenever an event is
// appended to sessionID, until cancel is called.
func (l *Listener) Subscribe(sessionID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	set := l.waiters[sessionID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		l.waiters[sessionID] = set
	}
	set[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(set, ch)
		if len(set) == 0 {
			delete(l.waiters, sessionID)
		}
		l.mu.Unlock()
	}
}

// wake signals every waiter of sessionID, or of every session when sessionID is "".
func (l *Listener) wake(sessionID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sessionID != "" {
		signal(l.waiters[sessionID]) // one session's waiters, found by key
		return
	}
	for _, set := range l.waiters {
		signal(set)
	}
}

func signal(set map[chan struct{}]struct{}) {
	for ch := range set {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Run listens until ctx ends, reconnecting after failures. Each (re)connection wakes
// every waiter, since notifications may have been missed meanwhile.
func (l *Listener) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("event listener lost its connection; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// listen holds one connection until it fails or ctx ends.
func (l *Listener) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+EventChannel); err != nil {
		return err
	}
	l.wake("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, _, ok := eventKey(n.Payload); ok {
			l.wake(id)
		}
	}
}
