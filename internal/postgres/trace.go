package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/trace"
)

var _ trace.Store = (*Store)(nil)

// SaveSpans keeps the spans of the sessions p may see, up to maxPerSession a session.
func (s *Store) SaveSpans(ctx context.Context, p auth.Principal, spans []trace.Span, maxPerSession int) (kept, rejected int, err error) {
	bySession := map[string][]trace.Span{}
	var order []string
	for _, sp := range spans {
		if _, ok := bySession[sp.SessionID]; !ok {
			order = append(order, sp.SessionID)
		}
		bySession[sp.SessionID] = append(bySession[sp.SessionID], sp)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, sid := range order {
			group := bySession[sid]
			if !uuidLike(sid) {
				rejected += len(group)
				continue
			}
			if _, err := lockSession(ctx, tx, p, sid); err != nil {
				if errors.Is(err, session.ErrNotFound) {
					rejected += len(group)
					continue
				}
				return err
			}
			var have int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM session_spans WHERE session_id = $1`, sid).Scan(&have); err != nil {
				return err
			}
			for _, sp := range group {
				if maxPerSession > 0 && have >= maxPerSession {
					rejected++
					continue
				}
				attrs, _ := json.Marshal(sp.Attributes)
				tag, err := tx.Exec(ctx, `
					INSERT INTO session_spans (session_id, trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, attributes, status_code, status_message)
					VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8::numeric, $9, $10, $11)
					ON CONFLICT DO NOTHING`,
					sid, sp.TraceID, sp.SpanID, sp.ParentSpanID, sp.Name, sp.Kind, strconv.FormatUint(sp.Start, 10), strconv.FormatUint(sp.End, 10),
					attrs, sp.Status.Code, sp.Status.Message)
				if err != nil {
					return err
				}
				have += int(tag.RowsAffected())
				kept++
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fail("save spans", err)
	}
	return kept, rejected, nil
}

func uuidLike(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return true
}

// Spans lists session sessionID's spans by start time, limit at a time.
func (s *Store) Spans(ctx context.Context, p auth.Principal, sessionID string, after *trace.Cursor, limit int) ([]trace.Span, *trace.Cursor, error) {
	if _, err := s.Session(ctx, p, sessionID); err != nil {
		return nil, nil, err
	}
	q := `SELECT trace_id, span_id, parent_span_id, name, kind, start_ns::text, end_ns::text, attributes, status_code, status_message
		FROM session_spans WHERE session_id = $1`
	args := []any{sessionID}
	if after != nil {
		q += ` AND (start_ns, span_id) > ($2::numeric, $3)`
		args = append(args, strconv.FormatUint(after.Start, 10), after.SpanID)
	}
	q += ` ORDER BY start_ns, span_id LIMIT ` + strconv.Itoa(limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, fail("spans", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (trace.Span, error) {
		sp := trace.Span{SessionID: sessionID}
		var start, end string
		var attrs []byte
		err := r.Scan(&sp.TraceID, &sp.SpanID, &sp.ParentSpanID, &sp.Name, &sp.Kind, &start, &end, &attrs, &sp.Status.Code, &sp.Status.Message)
		sp.Start, _ = strconv.ParseUint(start, 10, 64)
		sp.End, _ = strconv.ParseUint(end, 10, 64)
		json.Unmarshal(attrs, &sp.Attributes)
		return sp, err
	})
	if err != nil {
		return nil, nil, fail("spans", err)
	}
	var next *trace.Cursor
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = &trace.Cursor{Start: last.Start, SpanID: last.SpanID}
	}
	return out, next, nil
}
