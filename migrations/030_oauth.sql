-- MCP hosts sign in with OAuth 2.1. A host registers itself as a public client; the
-- person approves it on the console, choosing the agent it acts as; the code the
-- host exchanges becomes a grant, which is an agent key without a secret: every rule
-- bound to a key (limits, waits, idempotency, revocation, a paused agent) holds for
-- the grant's tokens as it does for a key, and revoking the grant (or the key on the
-- console) ends them all at once. Codes and tokens are kept only as keyed hashes.

CREATE TABLE oauth_clients (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{16,64}$'),
    name          text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    redirect_uris text[] NOT NULL CHECK (cardinality(redirect_uris) BETWEEN 1 AND 5),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);

-- An authorization request the person has yet to answer on the console.
CREATE TABLE oauth_requests (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),
    scopes         text[] NOT NULL,
    resource       text NOT NULL,
    state          text NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX oauth_requests_expiry ON oauth_requests (expires_at);

-- A grant is an api_keys row of scope agent with no secret and the client it was
-- given to.
ALTER TABLE api_keys
    ADD COLUMN oauth_client_id text REFERENCES oauth_clients (id),
    ALTER COLUMN secret_hash DROP NOT NULL,
    ADD CONSTRAINT api_keys_secret_or_grant CHECK ((secret_hash IS NULL) = (oauth_client_id IS NOT NULL)),
    ADD CONSTRAINT api_keys_grant_of_agent CHECK (oauth_client_id IS NULL OR scope = 'agent');

-- An authorization code, single use: used_at is set by the one exchange that takes
-- it, and grant_kid names what that exchange made, so that a second use (replayed_at)
-- revokes it, or keeps it from being made.
CREATE TABLE oauth_codes (
    hash           bytea PRIMARY KEY CHECK (length(hash) = 32),
    client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    scopes         text[] NOT NULL,
    resource       text NOT NULL,
    user_id        uuid NOT NULL,
    agent_id       uuid NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz,
    replayed_at    timestamptz,
    grant_kid      text REFERENCES api_keys (kid),
    FOREIGN KEY (agent_id, user_id) REFERENCES agents (id, user_id)
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);

-- Access and refresh tokens of a grant. A refresh token is rotated once: used_at is
-- set when it is exchanged, and presenting it again revokes the grant.
CREATE TABLE oauth_tokens (
    hash       bytea PRIMARY KEY CHECK (length(hash) = 32),
    kind       text NOT NULL CHECK (kind IN ('access', 'refresh')),
    grant_kid  text NOT NULL REFERENCES api_keys (kid),
    resource   text NOT NULL,
    scopes     text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_kid);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);
