-- Idempotency records keep a keyed fingerprint of the body (HMAC-SHA256 under the
-- server's secret) instead of its plain SHA-256, from which a short value in a body
-- could be recovered by hashing candidates. The plain hashes already stored are
-- overwritten with random bytes: a retry of such a request gets 409, never a replay
-- of another body's answer.
ALTER TABLE idempotency_keys RENAME COLUMN body_sha256 TO body_mac;
UPDATE idempotency_keys SET body_mac = decode(md5(random()::text || clock_timestamp()::text), 'hex');
