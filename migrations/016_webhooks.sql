-- Webhooks: a user's URLs and the events they want. A delivery is queued in the
-- transaction that appends the session event it reports, so none is lost and none
-- reports a change that was rolled back. Secrets are kept sealed.
CREATE TABLE webhooks (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id),
    url         text NOT NULL,
    events      text[] NOT NULL,
    description text NOT NULL DEFAULT '',
    key_id      text NOT NULL,
    nonce       bytea NOT NULL CHECK (length(nonce) = 12),
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE INDEX webhooks_user ON webhooks (user_id) WHERE deleted_at IS NULL;

CREATE TABLE webhook_deliveries (
    id           bigserial PRIMARY KEY,
    webhook_id   uuid NOT NULL REFERENCES webhooks (id),
    event        text NOT NULL,
    payload      jsonb NOT NULL,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_status  integer,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id DESC);
