-- CAPTCHA tasks: an agent asks for a CAPTCHA's answer; its person answers it on the
-- approval page (through a captcha request), or a solver service does. The answer
-- goes to the agent alone and authorises nothing.

ALTER TABLE requests DROP CONSTRAINT requests_kind_check;
ALTER TABLE requests ADD CONSTRAINT requests_kind_check
    CHECK (kind IN ('confirm', 'choice', 'provide_missing', 'ask_before_use', 'choose_candidate', 'authorize_payment', 'captcha'));

CREATE TABLE captcha_tasks (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id     uuid NOT NULL REFERENCES sessions (id),
    request_id     uuid UNIQUE REFERENCES requests (id),
    user_id        uuid NOT NULL REFERENCES users (id),
    agent_id       uuid NOT NULL REFERENCES agents (id),
    client_task_id text NOT NULL,
    type           text NOT NULL CHECK (type IN ('image_to_text', 'recaptcha_v2', 'hcaptcha', 'turnstile')),
    page_url       text NOT NULL,
    site_key       text,
    image          bytea,
    reason         text NOT NULL DEFAULT '',
    via            text NOT NULL CHECK (via IN ('person', 'solver')),
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'solved', 'failed', 'expired')),
    solution       text,
    error          text,
    solver_task_id text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    solved_at      timestamptz,
    UNIQUE (session_id, client_task_id),
    CHECK ((via = 'person') = (request_id IS NOT NULL))
);
CREATE INDEX captcha_tasks_session ON captcha_tasks (session_id, created_at DESC);
