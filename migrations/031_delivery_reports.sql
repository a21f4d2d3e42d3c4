-- Delivery reports: after a payment the service settled, its agent or its person may
-- say what the seller gave for it, in codes only (no text that could carry a value).
-- One report per payment; its weight is what the payment paid, kept with it so that
-- the directory reads reports without the payments' offers. The payment's user and
-- settlement day are kept too: a person's reports on one seller count once a day.
CREATE TABLE delivery_reports (
    id          bigserial PRIMARY KEY,
    payment_id  uuid NOT NULL UNIQUE REFERENCES payments (id),
    hostname    text NOT NULL,
    user_id     uuid NOT NULL REFERENCES users (id),
    agent_id    uuid NOT NULL REFERENCES agents (id),
    reported_by text NOT NULL CHECK (reported_by IN ('agent', 'user')),
    outcome     text NOT NULL CHECK (outcome IN ('delivered', 'wrong', 'not_delivered')),
    reason      text NOT NULL CHECK (reason ~ '^[a-z_]{1,40}$'),
    value       bigint NOT NULL CHECK (value >= 0),
    settled_on  date NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX delivery_reports_hostname ON delivery_reports (hostname);

-- The directory reads each seller's settled payments for its own demand and for the
-- paid calls it recorded as not delivered.
CREATE INDEX payments_settled_hostname ON payments (hostname, settled_at) WHERE status = 'settled';
