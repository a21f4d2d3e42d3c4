package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

// Retention deletes a session closed longer ago than it keeps, with its requests and
// events, and nothing else; the event log's trigger still refuses to delete an open
// or recently closed session's events, whatever retention a transaction declares.
func TestRetentionDeletesOnlySessionsClosedLongAgo(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	_, scout, _ := principals(t, s, "ada")
	open := func(id string) session.Session {
		t.Helper()
		sess, err := s.CreateSession(ctx, scout, session.New{Type: "checkout", Description: "d", ClientSessionID: id}, 0)
		if err != nil {
			t.Fatal(err)
		}
		ttl := int64(600)
		if _, err := s.CreateRequest(ctx, scout, sess.ID, request.New{ClientRequestID: id, Kind: request.KindConfirm, TTLSeconds: &ttl,
			Params: request.Params{Summary: "Buy a map"}}, 0); err != nil {
			t.Fatal(err)
		}
		return sess
	}
	complete := func(sess session.Session) {
		t.Helper()
		if _, _, err := s.CompleteSession(ctx, scout, sess.ID, session.Completion{ClientCompletionID: "c", Status: session.StatusCompleted, Summary: "done"}); err != nil {
			t.Fatal(err)
		}
	}
	live, recent, old := open("live"), open("recent"), open("old")
	complete(recent)
	complete(old)
	if _, err := s.Pool().Exec(ctx, `UPDATE sessions SET closed_at = now() - interval '100 days' WHERE id = $1`, old.ID); err != nil {
		t.Fatal(err)
	}

	// By hand, the trigger lets nothing go but the old session's events, and only
	// under a declared retention of at least a day that it is past.
	try := func(retention, id string) error {
		var deleted error
		pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
			if retention != "" {
				if _, err := tx.Exec(ctx, `SELECT set_config('waystation.session_retention', $1, true)`, retention); err != nil {
					t.Fatal(err)
				}
			}
			_, deleted = tx.Exec(ctx, `DELETE FROM session_events WHERE session_id = $1`, id)
			return errRollback // keep the events for what follows
		})
		return deleted
	}
	for _, c := range []struct{ retention, id string }{
		{"", old.ID}, {"1 hour", old.ID}, {"200 days", old.ID}, {"30 days", live.ID}, {"30 days", recent.ID}, {"0", old.ID},
	} {
		if err := try(c.retention, c.id); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("retention %q: deleting events: %v", c.retention, err)
		}
	}
	if err := try("30 days", old.ID); err != nil {
		t.Errorf("the old session's events under a 30-day retention: %v", err)
	}

	if _, err := s.DeleteClosedSessions(ctx, time.Hour, 10); err == nil {
		t.Error("a retention under a day was accepted")
	}
	n, err := s.DeleteClosedSessions(ctx, 30*24*time.Hour, 10)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	count := func(q, id string) int {
		var n int
		if err := s.Pool().QueryRow(ctx, q, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, sess := range []session.Session{live, recent, old} {
		want := 1
		if sess.ID == old.ID {
			want = 0
		}
		if got := count(`SELECT count(*) FROM sessions WHERE id = $1`, sess.ID); got != want {
			t.Errorf("%s: %d sessions", sess.ClientSessionID, got)
		}
		if got := count(`SELECT count(*) FROM requests WHERE session_id = $1`, sess.ID); got != want {
			t.Errorf("%s: %d requests", sess.ClientSessionID, got)
		}
		if got := count(`SELECT count(*) FROM session_events WHERE session_id = $1`, sess.ID); (got > 0) != (want > 0) {
			t.Errorf("%s: %d events", sess.ClientSessionID, got)
		}
	}
	if n, err := s.DeleteClosedSessions(ctx, 30*24*time.Hour, 10); err != nil || n != 0 {
		t.Errorf("second sweep: %d, %v", n, err)
	}
}

var errRollback = errors.New("rolled back")
