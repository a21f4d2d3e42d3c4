-- The trust engine: what a probe read besides network, asset, payee and amount, and
-- the override history kept honest (a removal always says who removed it).

ALTER TABLE probes
    ADD COLUMN x402_version smallint CHECK (x402_version IN (1, 2)),
    ADD COLUMN scheme text NOT NULL DEFAULT '';

ALTER TABLE merchant_overrides
    ADD CONSTRAINT merchant_overrides_removal CHECK ((removed_at IS NULL) = (removed_by IS NULL));

-- The override in force is looked up among the rows not removed.
CREATE INDEX merchant_overrides_current ON merchant_overrides (hostname, set_at DESC)
    WHERE removed_at IS NULL;
