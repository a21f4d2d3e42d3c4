package postgres

import (
	"context"
)

// Fingerprint is a short text that changes whenever anything the directory snapshot is
// built from changes: methods (added, edited, enabled or disabled), probes, settled
// payments, delivery reports, overrides and origins. Each part reads an index, so it is cheap to ask often.
func (s *Store) Fingerprint(ctx context.Context) (string, error) {
	var fp string
	err := s.pool.QueryRow(ctx, `
		SELECT concat_ws('/',
			(SELECT count(*) FROM provider_methods),
			(SELECT max(updated_at) FROM provider_methods),
			(SELECT max(id) FROM probes),
			(SELECT max(id) FROM settled_payments),
			(SELECT max(id) FROM delivery_reports),
			(SELECT max(id) FROM merchant_overrides),
			(SELECT max(removed_at) FROM merchant_overrides),
			(SELECT max(updated_at) FROM origins))`).Scan(&fp)
	if err != nil {
		return "", fail("fingerprint", err)
	}
	return fp, nil
}
