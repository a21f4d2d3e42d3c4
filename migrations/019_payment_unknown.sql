-- A payment that left without an answer saying whether it settled is 'unknown' (never
-- 'failed'): counted in spend, its request left executing, until the chain's state
-- of its authorization settles it. checked_at paces those look-ups across replicas.
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('pending', 'executing', 'unknown', 'settled', 'failed'));
ALTER TABLE payments ADD COLUMN checked_at timestamptz;

DROP INDEX payments_open;
CREATE INDEX payments_open ON payments (created_at) WHERE status IN ('pending', 'executing', 'unknown');
