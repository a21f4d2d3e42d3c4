-- Open sessions are counted per agent against its cap.
CREATE INDEX sessions_agent_open ON sessions (agent_id) WHERE status = 'open';
-- The retention sweep finds closed sessions by when they closed.
CREATE INDEX sessions_closed_at ON sessions (closed_at) WHERE closed_at IS NOT NULL;

-- The event log stays append-only, with one exception: the retention sweep may delete
-- the events of a session closed longer ago than the retention it declares for its
-- transaction (SET LOCAL waystation.session_retention), which must be at least a day.
-- An open session's events, or a recently closed one's, can never be deleted.
CREATE OR REPLACE FUNCTION session_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keep interval;
BEGIN
    IF TG_OP = 'DELETE' THEN
        keep := nullif(current_setting('waystation.session_retention', true), '')::interval;
        IF keep >= interval '1 day' AND EXISTS (
            SELECT 1 FROM sessions s
            WHERE s.id = OLD.session_id AND s.closed_at < now() - keep
        ) THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'session_events is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
