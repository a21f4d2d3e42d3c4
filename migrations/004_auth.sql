-- The authenticated API: users own agents; API keys belong to a user, or to one of
-- its agents; agents run workflow sessions whose history is an append-only event log;
-- responses to idempotent requests are kept so that a retry replays them.

CREATE TABLE users (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text NOT NULL UNIQUE CHECK (name <> '' AND length(name) <= 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agents (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL REFERENCES users (id),
    name       text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, name),
    -- Lets keys and sessions name an agent together with its user.
    UNIQUE (id, user_id)
);

-- An API key is stored as HMAC-SHA256(pepper, secret) only: the secret is shown once.
-- kid is public (it is part of the display prefix) and finds the row.
CREATE TABLE api_keys (
    kid          text PRIMARY KEY CHECK (kid ~ '^[0-9a-f]{16}$'),
    scope        text NOT NULL CHECK (scope IN ('agent', 'user')),
    user_id      uuid NOT NULL REFERENCES users (id),
    agent_id     uuid,
    prefix       text NOT NULL,
    secret_hash  bytea NOT NULL CHECK (length(secret_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    FOREIGN KEY (agent_id, user_id) REFERENCES agents (id, user_id),
    CHECK ((scope = 'agent') = (agent_id IS NOT NULL))
);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at);

-- A session holds one workflow of one agent. last_event_seq is the seq of its latest
-- event: appending takes the next one under the row's lock, so seqs have no gaps.
CREATE TABLE sessions (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id              uuid NOT NULL,
    agent_id             uuid NOT NULL,
    type                 text NOT NULL,
    description          text NOT NULL,
    merchant_name        text,
    target_url           text,
    client_session_id    text NOT NULL,
    status               text NOT NULL DEFAULT 'open'
                             CHECK (status IN ('open', 'completed', 'failed', 'canceled', 'stopped')),
    summary              text,
    client_completion_id text,
    stop_reason          text,
    last_event_seq       bigint NOT NULL DEFAULT 0 CHECK (last_event_seq >= 0),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    closed_at            timestamptz,
    FOREIGN KEY (agent_id, user_id) REFERENCES agents (id, user_id),
    UNIQUE (agent_id, client_session_id),
    CHECK ((status = 'open') = (closed_at IS NULL))
);
CREATE INDEX sessions_agent_page ON sessions (agent_id, created_at DESC, id DESC);
CREATE INDEX sessions_user_page ON sessions (user_id, created_at DESC, id DESC);

-- The event log is append-only: rows are inserted with the seq their session hands
-- out, and the database refuses to change or remove them.
CREATE TABLE session_events (
    session_id      uuid NOT NULL REFERENCES sessions (id),
    seq             bigint NOT NULL CHECK (seq > 0),
    type            text NOT NULL,
    actor           text NOT NULL CHECK (actor IN ('agent', 'user', 'system')),
    client_event_id text,
    data            jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, client_event_id)
);

CREATE FUNCTION session_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'session_events is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER session_events_no_update_delete
    BEFORE UPDATE OR DELETE ON session_events
    FOR EACH ROW EXECUTE FUNCTION session_events_append_only();

CREATE TRIGGER session_events_no_truncate
    BEFORE TRUNCATE ON session_events
    FOR EACH STATEMENT EXECUTE FUNCTION session_events_append_only();

-- Responses to idempotent requests, by the key that made them, the route and the
-- client's idempotency key. response is NULL while the first request is in progress.
CREATE TABLE idempotency_keys (
    kid          text NOT NULL,
    route        text NOT NULL,
    key          text NOT NULL,
    body_sha256  bytea NOT NULL,
    status       integer,
    content_type text,
    response     bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    PRIMARY KEY (kid, route, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at) WHERE expires_at IS NOT NULL;
