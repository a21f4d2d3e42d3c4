-- An upto payment on Solana opens a payment channel derived from a recent slot: the
-- seller's, checked against one read from the network beside the blockhash, else
-- that one. The slot read is kept with the blockhash, so that a payment sent again
-- after a crash opens the very same channel. None is kept for other payments.
ALTER TABLE payments ADD COLUMN slot bigint CHECK (slot > 0);
