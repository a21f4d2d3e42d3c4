package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Keys open values under any configured key and seal them under the current one.
type Keys interface {
	Current() string
	Open(keyID string, nonce, ciphertext, aad []byte) ([]byte, error)
	Seal(plaintext, aad []byte) (keyID string, nonce, ciphertext []byte, err error)
}

// resealBatch is how many values one transaction re-seals.
const resealBatch = 500

// sealedTables are the tables of sealed values: how a row is named, and its
// additional data, as each was sealed.
var sealedTables = []struct{ name, selectRows, update string }{
	{"memory values", `
		SELECT f.item_id::text || '|' || f.field_ref, i.user_id::text || '|' || i.id::text || '|' || f.field_ref, f.key_id, f.nonce, f.ciphertext
		FROM memory_fields f JOIN memory_items i ON i.id = f.item_id
		WHERE f.ciphertext IS NOT NULL AND f.key_id <> $1 LIMIT $2 FOR UPDATE OF f SKIP LOCKED`,
		`UPDATE memory_fields SET key_id = $2, nonce = $3, ciphertext = $4 WHERE item_id = split_part($1, '|', 1)::uuid AND field_ref = substr($1, 38)`},
	{"provided values", `
		SELECT handle, user_id::text || '|' || request_id::text || '|' || field_key, key_id, nonce, ciphertext
		FROM session_values WHERE key_id <> $1 LIMIT $2 FOR UPDATE SKIP LOCKED`,
		`UPDATE session_values SET key_id = $2, nonce = $3, ciphertext = $4 WHERE handle = $1`},
	{"webhook secrets", `
		SELECT id::text, 'webhook|' || user_id::text || '|' || id::text, key_id, nonce, ciphertext
		FROM webhooks WHERE key_id <> $1 LIMIT $2 FOR UPDATE SKIP LOCKED`,
		`UPDATE webhooks SET key_id = $2, nonce = $3, ciphertext = $4 WHERE id = $1::uuid`},
}

// Reseal re-seals under keys' current key every stored value sealed under another
// (memory values, provided values and webhook secrets), a batch to a transaction, and says how many
// it re-sealed. A value that does not open stops it: nothing is lost, and the keys
// it needs can be added back.
func (s *Store) Reseal(ctx context.Context, keys Keys) (int, error) {
	total := 0
	for _, t := range sealedTables {
		for {
			n := 0
			err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, t.selectRows, keys.Current(), resealBatch)
				if err != nil {
					return err
				}
				type row struct {
					id, aad, keyID string
					nonce, ct      []byte
				}
				found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
					var x row
					err := r.Scan(&x.id, &x.aad, &x.keyID, &x.nonce, &x.ct)
					return x, err
				})
				if err != nil {
					return err
				}
				for _, x := range found {
					plain, err := keys.Open(x.keyID, x.nonce, x.ct, []byte(x.aad))
					if err != nil {
						return err
					}
					keyID, nonce, ct, err := keys.Seal(plain, []byte(x.aad))
					clear(plain)
					if err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, t.update, x.id, keyID, nonce, ct); err != nil {
						return err
					}
				}
				n = len(found)
				return nil
			})
			if err != nil {
				return total, fail("reseal "+t.name, err)
			}
			total += n
			if n < resealBatch {
				break
			}
		}
	}
	return total, nil
}
