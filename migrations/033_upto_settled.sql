-- What an upto payment moved, once known: the seller settles what the call used, up
-- to the maximum the person approved (value). Until then, and for exact payments,
-- spend counts value.
ALTER TABLE payments
    ADD COLUMN settled_amount text CHECK (settled_amount ~ '^[0-9]{1,78}$'),
    ADD COLUMN settled_value bigint CHECK (settled_value >= 0 AND settled_value <= value);
