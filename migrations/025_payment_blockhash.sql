-- A payment on Solana is signed over a recent blockhash, read from the network when
-- it is first signed: kept with its nonce and validity window, so that a payment sent
-- again after a crash is the very same transaction (ed25519 signs deterministically),
-- which Solana lands at most once. Still no signature is kept.
ALTER TABLE payments ADD COLUMN blockhash text CHECK (blockhash ~ '^[1-9A-HJ-NP-Za-km-z]{32,44}$');
