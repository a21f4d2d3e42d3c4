-- Memory: what a user keeps for their agents to use, item by item. Values are sealed
-- with AES-256-GCM (key id, random nonce, additional data user|item|fieldRef, so a
-- ciphertext moved to another row does not open); a field without a value has none.
CREATE TABLE memory_items (
    id             uuid PRIMARY KEY,
    user_id        uuid NOT NULL REFERENCES users (id),
    label          text NOT NULL,
    -- hosts the item is for (lower-case hostnames); empty means every site.
    hosts          text[] NOT NULL DEFAULT '{}',
    ask_before_use boolean NOT NULL DEFAULT true,
    read_only      boolean NOT NULL DEFAULT false,
    revision       integer NOT NULL DEFAULT 1 CHECK (revision > 0),
    created_by     text NOT NULL CHECK (created_by IN ('user', 'agent', 'request')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    archived_at    timestamptz
);
CREATE INDEX memory_items_user_page ON memory_items (user_id, created_at DESC, id DESC) WHERE archived_at IS NULL;

CREATE TABLE memory_fields (
    item_id    uuid NOT NULL REFERENCES memory_items (id),
    field_ref  text NOT NULL,
    position   integer NOT NULL,
    label      text NOT NULL,
    hint       text,
    value_type text NOT NULL,
    secret     boolean NOT NULL DEFAULT false,
    key_id     text,
    nonce      bytea CHECK (length(nonce) = 12),
    ciphertext bytea,
    PRIMARY KEY (item_id, field_ref),
    CHECK ((key_id IS NULL) = (ciphertext IS NULL) AND (nonce IS NULL) = (ciphertext IS NULL))
);

-- Handles a session was given for memory fields: opaque, 160 random bits, good in
-- that session only.
CREATE TABLE memory_handles (
    handle     text PRIMARY KEY CHECK (length(handle) >= 24),
    session_id uuid NOT NULL REFERENCES sessions (id),
    item_id    uuid NOT NULL REFERENCES memory_items (id),
    field_ref  text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, item_id, field_ref)
);

-- One row per materialisation that returned values: who, where, which handles and
-- why; never a value.
CREATE TABLE materializations (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id uuid NOT NULL REFERENCES sessions (id),
    user_id    uuid NOT NULL REFERENCES users (id),
    agent_id   uuid NOT NULL REFERENCES agents (id),
    kid        text NOT NULL,
    handles    text[] NOT NULL,
    purpose    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX materializations_session ON materializations (session_id, created_at);

-- The redaction set reads every value a user provided.
CREATE INDEX session_values_user ON session_values (user_id);

-- choose_candidate: the user picks which saved value fills a field.
ALTER TABLE requests DROP CONSTRAINT requests_kind_check;
ALTER TABLE requests ADD CONSTRAINT requests_kind_check
    CHECK (kind IN ('confirm', 'choice', 'provide_missing', 'ask_before_use', 'choose_candidate'));
