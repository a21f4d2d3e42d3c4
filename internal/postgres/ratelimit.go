package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/ratelimit"
)

var _ ratelimit.Store = (*Store)(nil)

// The buckets live in the search_rate table, named for the first limit kept there;
// each limit's callers are told apart by their keys' prefixes.

// TakeToken takes one token from caller's bucket, shared by every replica: a bucket
// of burst tokens that fills one every interval, kept as the time it is full again
// (GCRA). It answers when the bucket is full again and whether the token was taken;
// a refusal changes nothing. One statement; the row's lock orders a caller's
// concurrent takes. Now and then it forgets callers whose buckets have been full for
// an hour. The interval and the bucket's window are given in fractional
// microseconds: rounded to whole ones, a rate above a token a microsecond would make
// the window nothing, and refuse every take whose clock runs behind the last one's.
func (s *Store) TakeToken(ctx context.Context, caller string, now time.Time, interval time.Duration, burst int) (time.Time, bool, error) {
	var tat time.Time
	micros := float64(interval) / float64(time.Microsecond)
	err := s.pool.QueryRow(ctx, `
		INSERT INTO search_rate AS r (caller, tat) VALUES ($1, $2::timestamptz + $3 * interval '1 microsecond')
		ON CONFLICT (caller) DO UPDATE SET tat = greatest(r.tat, $2) + $3 * interval '1 microsecond'
		WHERE greatest(r.tat, $2) + $3 * interval '1 microsecond' <= $2::timestamptz + $4 * interval '1 microsecond'
		RETURNING tat`, caller, now, micros, micros*float64(burst)).Scan(&tat)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.pool.QueryRow(ctx, `SELECT tat FROM search_rate WHERE caller = $1`, caller).Scan(&tat)
		return tat, false, fail("take rate token", err)
	}
	if err != nil {
		return tat, false, fail("take rate token", err)
	}
	if rand.IntN(1000) == 0 {
		// A sweep that fails is made by another query.
		s.pool.Exec(ctx, `DELETE FROM search_rate WHERE tat < $1`, now.Add(-time.Hour))
	}
	return tat, true, nil
}
