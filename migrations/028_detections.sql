-- Detections: each time an agent's traffic held one of its person's protected values
-- that it was never given, or a flood of strings of a value's shape. Never the value,
-- nor which one: where (the route) and what kind, so that the person sees why an agent
-- was paused.
CREATE TABLE detections (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id),
    agent_id   uuid NOT NULL,
    kid        text NOT NULL,
    route      text NOT NULL CHECK (length(route) <= 200),
    kind       text NOT NULL CHECK (kind IN ('value', 'candidates')),
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (agent_id, user_id) REFERENCES agents (id, user_id)
);
CREATE INDEX detections_agent ON detections (agent_id, created_at);
CREATE INDEX detections_user ON detections (user_id, created_at DESC);

-- Why an agent is paused when the service paused it (its detections went over the
-- budget), and since when its status is what it is: detections before a resume do
-- not count again.
ALTER TABLE agents
    ADD COLUMN paused_reason text CHECK (paused_reason IN ('protected_values')),
    ADD COLUMN status_changed_at timestamptz NOT NULL DEFAULT now();
