-- Requests: the human-in-the-loop tasks an agent raises inside a session. A request
-- moves through its states only by conditional updates (WHERE status = the state it
-- leaves), each of which appends a request.status_changed event to the session's log
-- in the same transaction. What a fulfilled request yields is an artifact, value-free
-- and claimed once; the values a user provides are kept only encrypted.

CREATE TABLE requests (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id        uuid NOT NULL REFERENCES sessions (id),
    user_id           uuid NOT NULL REFERENCES users (id),
    agent_id          uuid NOT NULL REFERENCES agents (id),
    client_request_id text NOT NULL,
    kind              text NOT NULL CHECK (kind IN ('confirm', 'choice', 'provide_missing', 'ask_before_use')),
    status            text NOT NULL CHECK (status IN ('waiting_user', 'approved', 'executing', 'fulfilled',
                                                      'denied', 'expired', 'failed', 'canceled')),
    resolution_path   text NOT NULL CHECK (resolution_path IN ('user', 'auto')),
    -- What the agent shows the user: context{url, pageTitle, merchantName, reason},
    -- fields (names and types, never values), options, params.
    context           jsonb NOT NULL DEFAULT '{}',
    fields            jsonb NOT NULL DEFAULT '[]',
    options           jsonb NOT NULL DEFAULT '[]',
    params            jsonb NOT NULL DEFAULT '{}',
    expires_at        timestamptz NOT NULL,
    decided_by        text CHECK (decided_by IN ('agent', 'user', 'system')),
    decided_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, client_request_id)
);
CREATE INDEX requests_session_page ON requests (session_id, created_at DESC, id DESC);
-- The expiry sweep reads only requests still waiting for their user.
CREATE INDEX requests_waiting_expiry ON requests (expires_at) WHERE status = 'waiting_user';

-- The artifact of a fulfilled request: value-free data (handles, a confirmation bound
-- to what was confirmed, the chosen option). Claiming sets claimed_at once.
CREATE TABLE request_artifacts (
    request_id uuid PRIMARY KEY REFERENCES requests (id),
    session_id uuid NOT NULL REFERENCES sessions (id),
    type       text NOT NULL CHECK (type IN ('reference', 'confirmation', 'choice')),
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    claimed_at timestamptz
);

-- Values provided through requests, sealed with AES-256-GCM under the server's key
-- key_id; the additional data binds each ciphertext to user|request|field, so a
-- ciphertext moved to another row does not open. handle is what agents hold.
CREATE TABLE session_values (
    handle     text PRIMARY KEY CHECK (length(handle) >= 24),
    session_id uuid NOT NULL REFERENCES sessions (id),
    request_id uuid NOT NULL REFERENCES requests (id),
    user_id    uuid NOT NULL REFERENCES users (id),
    field_key  text NOT NULL,
    key_id     text NOT NULL,
    nonce      bytea NOT NULL CHECK (length(nonce) = 12),
    ciphertext bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (request_id, field_key)
);

-- People sign in to the approval pages with a user key; the browser holds a random
-- token whose SHA-256 is kept here, with the key it came from (revoking the key ends
-- the sign-in) and the token its forms must carry against cross-site requests.
CREATE TABLE web_sessions (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    kid        text NOT NULL REFERENCES api_keys (kid),
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
