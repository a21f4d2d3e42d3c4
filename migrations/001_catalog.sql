-- The seller catalog: providers, their methods, the merchants (hostnames) behind them,
-- probe history, settled payments, operator overrides and method embeddings.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE providers (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE merchants (
    hostname   text PRIMARY KEY CHECK (hostname ~ '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE provider_methods (
    id              bigserial PRIMARY KEY,
    provider_id     bigint NOT NULL REFERENCES providers (id),
    slug            text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
    name            text NOT NULL CHECK (name <> ''),
    description     text NOT NULL DEFAULT '',
    category        text NOT NULL CHECK (category IN ('ai', 'blockchain', 'commerce',
                        'communication', 'data', 'developer', 'finance', 'geo', 'media',
                        'news', 'search', 'security', 'social', 'travel', 'weather', 'other')),
    kind            text NOT NULL CHECK (kind IN ('x402', 'checkout', 'subscription', 'account')),
    hostname        text NOT NULL REFERENCES merchants (hostname),
    endpoint_method text NOT NULL DEFAULT 'GET',
    endpoint_url    text NOT NULL,
    enabled         boolean NOT NULL DEFAULT true,
    guidance        jsonb NOT NULL DEFAULT '{}',
    offers          jsonb NOT NULL DEFAULT '[]',
    -- source_key identifies a method across imports of one source (its resource URL).
    source_key      text UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_methods_hostname ON provider_methods (hostname);

-- Probes are history: one row per call of a method's endpoint, never updated.
CREATE TABLE probes (
    id          bigserial PRIMARY KEY,
    method_id   bigint NOT NULL REFERENCES provider_methods (id) ON DELETE CASCADE,
    hostname    text NOT NULL REFERENCES merchants (hostname),
    probed_at   timestamptz NOT NULL,
    outcome     text NOT NULL,
    http_status integer,
    latency_ms  integer,
    network     text NOT NULL DEFAULT '',
    asset       text NOT NULL DEFAULT '',
    pay_to      text NOT NULL DEFAULT '',
    amount      text,
    detail      text NOT NULL DEFAULT ''
);
CREATE INDEX probes_method_time ON probes (method_id, probed_at DESC);
CREATE INDEX probes_hostname_time ON probes (hostname, probed_at DESC);

-- Settled payments feed the per-hostname stats.
CREATE TABLE settled_payments (
    id         bigserial PRIMARY KEY,
    hostname   text NOT NULL REFERENCES merchants (hostname),
    method_id  bigint REFERENCES provider_methods (id) ON DELETE SET NULL,
    settled_at timestamptz NOT NULL DEFAULT now(),
    delivered  boolean NOT NULL
);
CREATE INDEX settled_payments_hostname ON settled_payments (hostname);

-- Operator overrides are kept as an audit trail; the current one is the newest that is
-- neither removed nor expired.
CREATE TABLE merchant_overrides (
    id         bigserial PRIMARY KEY,
    hostname   text NOT NULL REFERENCES merchants (hostname),
    verdict    text NOT NULL CHECK (verdict IN ('proceed', 'caution', 'avoid', 'unknown')),
    reason     text NOT NULL CHECK (reason <> ''),
    set_by     text NOT NULL,
    set_at     timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    removed_at timestamptz,
    removed_by text
);
CREATE INDEX merchant_overrides_hostname ON merchant_overrides (hostname, set_at DESC);

-- Embedding models and the vectors of every method under each.
CREATE TABLE embedding_models (
    id                text PRIMARY KEY,
    dimensions        integer NOT NULL CHECK (dimensions > 0),
    similarity_floor  real NOT NULL,
    similarity_margin real NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE method_embeddings (
    method_id  bigint NOT NULL REFERENCES provider_methods (id) ON DELETE CASCADE,
    model_id   text NOT NULL REFERENCES embedding_models (id),
    text_hash  bytea NOT NULL,
    embedding  vector NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, method_id)
);
