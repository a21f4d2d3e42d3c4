package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
)

// Errors of operator overrides.
var (
	ErrUnknownMerchant = errors.New("hostname is not in the directory")
	ErrNoOverride      = errors.New("no override in force")
)

// OverrideChange is an operator's decision about a hostname.
type OverrideChange struct {
	Hostname  string
	Verdict   string
	Reason    string
	By        string
	ExpiresAt *time.Time
}

// SetOverride records an operator override for a hostname. The override in force
// before it, if any, is marked removed by the same operator, so the history reads as
// one decision replacing another; rows are never deleted.
func (s *Store) SetOverride(ctx context.Context, c OverrideChange, now time.Time) (directory.Override, error) {
	host, err := catalog.NormalizeHostname(c.Hostname)
	if err != nil {
		return directory.Override{}, fail("set override: hostname", err)
	}
	switch c.Verdict {
	case directory.VerdictProceed, directory.VerdictCaution, directory.VerdictAvoid, directory.VerdictUnknown:
	default:
		return directory.Override{}, fmt.Errorf("postgres: set override: verdict %q is not one of %s", c.Verdict, strings.Join(directory.Verdicts, ", "))
	}
	if strings.TrimSpace(c.Reason) == "" || strings.TrimSpace(c.By) == "" {
		return directory.Override{}, errors.New("postgres: set override: a reason and who sets it are required")
	}
	if c.ExpiresAt != nil && !c.ExpiresAt.After(now) {
		return directory.Override{}, errors.New("postgres: set override: it would expire before it starts")
	}
	o := directory.Override{Verdict: c.Verdict, Reason: strings.TrimSpace(c.Reason), SetAt: now.UTC(), ExpiresAt: c.ExpiresAt}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM merchants WHERE hostname = $1)`, host).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%s: %w", host, ErrUnknownMerchant)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE merchant_overrides SET removed_at = $2, removed_by = $3
			WHERE hostname = $1 AND removed_at IS NULL`, host, now, c.By); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO merchant_overrides (hostname, verdict, reason, set_by, set_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, host, o.Verdict, o.Reason, c.By, now, c.ExpiresAt)
		return err
	})
	if err != nil {
		return directory.Override{}, fail("set override", err)
	}
	return o, nil
}

// RemoveOverride ends the override of a hostname, recording who ended it and when.
// It returns ErrNoOverride when there is none to remove.
func (s *Store) RemoveOverride(ctx context.Context, hostname, by string, now time.Time) error {
	host, err := catalog.NormalizeHostname(hostname)
	if err != nil {
		return fail("remove override: hostname", err)
	}
	if strings.TrimSpace(by) == "" {
		return errors.New("postgres: remove override: who removes it is required")
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE merchant_overrides SET removed_at = $2, removed_by = $3
		WHERE hostname = $1 AND removed_at IS NULL AND (expires_at IS NULL OR expires_at > $2)`, host, now, by)
	if err != nil {
		return fail("remove override", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: remove override of %s: %w", host, ErrNoOverride)
	}
	return nil
}
