-- Spans agents send, tied to the session they name; cleaned of protected values and
-- URL queries before they are kept. Sent again, a span is kept once.
CREATE TABLE session_spans (
    session_id     uuid NOT NULL REFERENCES sessions (id),
    trace_id       text NOT NULL CHECK (trace_id ~ '^[0-9a-f]{32}$'),
    span_id        text NOT NULL CHECK (span_id ~ '^[0-9a-f]{16}$'),
    parent_span_id text NOT NULL DEFAULT '',
    name           text NOT NULL,
    kind           integer NOT NULL DEFAULT 0,
    start_ns       numeric(20) NOT NULL,
    end_ns         numeric(20) NOT NULL,
    attributes     jsonb NOT NULL DEFAULT '{}',
    status_code    integer NOT NULL DEFAULT 0,
    status_message text NOT NULL DEFAULT '',
    received_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, trace_id, span_id)
);
CREATE INDEX session_spans_start ON session_spans (session_id, start_ns, span_id);
