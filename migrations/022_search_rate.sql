-- The per-caller search rate every replica shares: one row per caller that searched,
-- with its theoretical arrival time (GCRA): the bucket is full again at tat. Unlogged:
-- it is written on every search and is worth nothing after a crash, when every bucket
-- simply starts full.
CREATE UNLOGGED TABLE search_rate (
    caller text PRIMARY KEY,
    tat    timestamptz NOT NULL
);
