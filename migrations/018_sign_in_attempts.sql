-- Sign-in attempts per client address, shared by every replica: a token bucket per
-- address (tokens left at `at`). Losing it in a crash only forgets recent attempts,
-- so it is not logged.
CREATE UNLOGGED TABLE sign_in_attempts (
    address text PRIMARY KEY CHECK (length(address) <= 100),
    tokens  double precision NOT NULL,
    allowed boolean NOT NULL,
    at      timestamptz NOT NULL
);
CREATE INDEX sign_in_attempts_at ON sign_in_attempts (at);
