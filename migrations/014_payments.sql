-- Payments: an agent asks to pay for one exact HTTP request, the person approves an
-- authorize_payment request, and the service signs and sends the payment itself.
-- A payment outlives its session (spend is counted from it), so its links to the
-- session and the request go when retention deletes them. The signature is never
-- kept: the nonce and validity window are, so that a payment sent again after a
-- crash is the very same payment, which a token settles at most once.

ALTER TABLE requests DROP CONSTRAINT requests_kind_check;
ALTER TABLE requests ADD CONSTRAINT requests_kind_check
    CHECK (kind IN ('confirm', 'choice', 'provide_missing', 'ask_before_use', 'choose_candidate', 'authorize_payment'));
ALTER TABLE request_artifacts DROP CONSTRAINT request_artifacts_type_check;
ALTER TABLE request_artifacts ADD CONSTRAINT request_artifacts_type_check
    CHECK (type IN ('reference', 'confirmation', 'choice', 'payment'));

-- What a person lets one agent spend, in millionths of a dollar (USDC's unit).
CREATE TABLE spending_limits (
    agent_id    uuid PRIMARY KEY REFERENCES agents (id),
    per_payment bigint NOT NULL CHECK (per_payment >= 0),
    daily       bigint NOT NULL CHECK (daily >= 0),
    monthly     bigint NOT NULL CHECK (monthly >= 0),
    hosts_mode  text NOT NULL CHECK (hosts_mode IN ('allow', 'deny')),
    hosts       text[] NOT NULL DEFAULT '{}',
    paused      boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payments (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    request_id    uuid UNIQUE REFERENCES requests (id) ON DELETE SET NULL,
    session_id    uuid REFERENCES sessions (id) ON DELETE SET NULL,
    user_id       uuid NOT NULL REFERENCES users (id),
    agent_id      uuid NOT NULL REFERENCES agents (id),
    hostname      text NOT NULL,
    http_request  jsonb NOT NULL,
    -- The offer as the person saw it, and as the seller wrote it (for signing).
    offer         jsonb NOT NULL,
    raw_offer     jsonb NOT NULL,
    value         bigint NOT NULL CHECK (value >= 0),
    maximum_debit bigint NOT NULL CHECK (maximum_debit > 0),
    merchant      jsonb NOT NULL DEFAULT '{}',
    override      boolean NOT NULL DEFAULT false,
    payer         text NOT NULL,
    nonce         bytea NOT NULL UNIQUE CHECK (length(nonce) = 32),
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'executing', 'settled', 'failed')),
    failure       text,
    attempts      integer NOT NULL DEFAULT 0,
    valid_after   bigint,
    valid_before  bigint,
    settlement    jsonb,
    transaction   text,
    delivered     boolean,
    created_at    timestamptz NOT NULL DEFAULT now(),
    taken_at      timestamptz,
    signed_at     timestamptz,
    settled_at    timestamptz,
    CHECK ((status = 'failed') = (failure IS NOT NULL)),
    CHECK (signed_at IS NULL OR (valid_after IS NOT NULL AND valid_before IS NOT NULL))
);
CREATE INDEX payments_open ON payments (created_at) WHERE status IN ('pending', 'executing');
CREATE INDEX payments_agent_spend ON payments (agent_id, taken_at) WHERE taken_at IS NOT NULL;
CREATE INDEX payments_session ON payments (session_id, created_at DESC);
