package pgtest

import (
	"context"
	"fmt"

	"github.com/waystation/waystation/internal/postgres"
)

// GrowCatalog adds synthetic methods to the catalog in store until it holds total,
// for benchmarks at a scale no real catalog has yet. Each is the name of one existing
// method and words drawn from the descriptions of three others, so that their vectors
// spread like a catalog's rather than clustering as near-copies of the real ones; each
// keeps the provider, category, kind and hostname of the method it copies. The result
// depends only on the methods GrowCatalog did not make, so two databases grown from the
// same catalog match, and growing again is growing once: a catalog grown before (to
// fewer methods, or as many) gets only the variants it lacks, the same as a catalog
// grown once to total holds.
func GrowCatalog(ctx context.Context, store *postgres.Store, total int) error {
	// Variant g of method a is slug a.slug-vg at a.endpoint_url/vg, of a's provider:
	// the methods that are variants of another are the ones made before.
	_, err := store.Pool().Exec(ctx, `
		WITH grown AS (
			SELECT v.id FROM provider_methods v JOIN provider_methods a
				ON a.slug = regexp_replace(v.slug, '-v[0-9]+$', '') AND a.provider_id = v.provider_id
				AND v.endpoint_url = a.endpoint_url || '/v' || substring(v.slug FROM '-v([0-9]+)$')
			WHERE v.slug ~ '-v[0-9]+$'),
		     src AS (SELECT row_number() OVER (ORDER BY id) - 1 AS i, * FROM provider_methods
				WHERE id NOT IN (SELECT id FROM grown)),
		     n AS (SELECT count(*) AS c FROM src)
		INSERT INTO provider_methods (provider_id, slug, name, description, category, kind, hostname, endpoint_url)
		SELECT a.provider_id, a.slug || '-v' || g, a.name || ' ' || split_part(b.description, ' ', (1 + g % 4)::int),
			concat_ws(' ', split_part(b.description, ' ', (1 + g % 9)::int), split_part(b.description, ' ', (3 + g % 7)::int),
				split_part(c.description, ' ', (1 + g % 6)::int), split_part(c.description, ' ', (4 + g % 5)::int),
				split_part(d.description, ' ', (2 + g % 8)::int), split_part(d.description, ' ', (5 + g % 3)::int)),
			a.category, a.kind, a.hostname, a.endpoint_url || '/v' || g
		FROM generate_series(1, $1::int - (SELECT c FROM n)) AS g, n
		JOIN src a ON true JOIN src b ON true JOIN src c ON true JOIN src d ON true
		WHERE a.i = g % n.c AND b.i = (g * 7919) % n.c AND c.i = (g * 104729) % n.c AND d.i = (g * 1299709) % n.c
		ORDER BY g
		ON CONFLICT (slug) DO NOTHING`, total)
	if err != nil {
		return fmt.Errorf("pgtest: grow the catalog to %d methods: %w", total, err)
	}
	return nil
}
