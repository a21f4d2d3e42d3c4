package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// merchantsListed reads when each hostname was first listed, for the look-alike
// rule: a merchant's row is made with its first method and never removed, so its
// time stands however its methods come and go.
func merchantsListed(ctx context.Context, tx pgx.Tx) (map[string]time.Time, error) {
	rows, _ := tx.Query(ctx, `SELECT hostname, created_at FROM merchants`)
	listed := map[string]time.Time{}
	var host string
	var at time.Time
	_, err := pgx.ForEachRow(rows, []any{&host, &at}, func() error {
		listed[host] = at.UTC()
		return nil
	})
	if err != nil {
		return nil, fail("merchants listed", err)
	}
	return listed, nil
}
