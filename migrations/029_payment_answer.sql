-- What the seller answered to a payment whose outcome was left unknown (a 402, an
-- error, garbage): kept so that once the chain shows the money moved, the person and
-- the agent see the payment settled and what the seller gave for it, and the
-- seller's record counts a paid call it did not deliver.
ALTER TABLE payments ADD COLUMN answer jsonb;
