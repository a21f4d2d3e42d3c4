-- Passkeys: a person signs in to the console with a WebAuthn credential registered
-- after a first sign-in with a user key. Only the credential's public part is kept
-- (the library's credential record, as JSON), under the relying party it was made for.
CREATE TABLE passkeys (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL REFERENCES users (id),
    rp_id         text NOT NULL,
    credential_id bytea NOT NULL CHECK (length(credential_id) BETWEEN 16 AND 1023),
    name          text NOT NULL CHECK (name <> '' AND length(name) <= 100),
    credential    jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    UNIQUE (rp_id, credential_id)
);
CREATE INDEX passkeys_user ON passkeys (user_id, created_at);

-- A ceremony (registering a passkey, or signing in with one) between its options and
-- the authenticator's answer: the challenge and what must match, found by the hash of
-- a token the browser holds in a cookie, and taken once.
CREATE TABLE passkey_ceremonies (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    user_id    uuid REFERENCES users (id),
    name       text NOT NULL DEFAULT '',
    session    jsonb NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX passkey_ceremonies_expiry ON passkey_ceremonies (expires_at);

-- A sign-in is made with a user key or with a passkey; deleting the passkey ends the
-- sign-ins it made, as revoking the key does.
ALTER TABLE web_sessions
    ALTER COLUMN kid DROP NOT NULL,
    ADD COLUMN passkey_id uuid REFERENCES passkeys (id) ON DELETE CASCADE,
    ADD CONSTRAINT web_sessions_one_credential CHECK ((kid IS NULL) <> (passkey_id IS NULL));
