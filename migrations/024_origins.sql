-- Origins that list themselves: each serves its own discovery manifest at
-- /.well-known/x402.json. An origin's listed methods are the owner's word for its
-- hostname: while it is listed or stale, a discovery listing's copies of that hostname
-- are not listed. status: listed; stale (the manifest could not be fetched for a
-- while, items still listed); delisted (gone too long, or listing nothing: its items
-- are disabled). owner is the payee that signed the origin (EIP-191) and that the
-- live 402s name, '' for none. etag answers If-None-Match on the next fetch.
CREATE TABLE origins (
    id              bigserial PRIMARY KEY,
    origin          text NOT NULL UNIQUE CHECK (origin ~ '^https?://[a-z0-9.-]+(:[0-9]+)?$'),
    hostname        text NOT NULL REFERENCES merchants (hostname),
    submitted_by    uuid REFERENCES users (id) ON DELETE SET NULL,
    status          text NOT NULL CHECK (status IN ('listed', 'stale', 'delisted')),
    reason          text NOT NULL DEFAULT '',
    owner           text NOT NULL DEFAULT '',
    etag            text NOT NULL DEFAULT '',
    listed_at       timestamptz NOT NULL,
    checked_at      timestamptz NOT NULL,
    last_fetched_at timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX origins_hostname ON origins (hostname) WHERE status <> 'delisted';

-- The origin a method was listed by, and whether its live 402 names the payee that
-- signed that origin.
ALTER TABLE provider_methods
    ADD COLUMN origin_id      bigint REFERENCES origins (id) ON DELETE SET NULL,
    ADD COLUMN owner_verified boolean NOT NULL DEFAULT false;
CREATE INDEX provider_methods_origin ON provider_methods (origin_id) WHERE origin_id IS NOT NULL;
