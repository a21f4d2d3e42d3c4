-- Each caller's share of the daily allowance of novel query embeddings: one row per
-- UTC day and caller (an API key's user, or an address), counted up atomically with
-- the day's row in search_allowance, so that no caller spends what all share.
CREATE TABLE search_caller_allowance (
    day    date NOT NULL,
    caller text NOT NULL,
    used   integer NOT NULL CHECK (used >= 0),
    PRIMARY KEY (day, caller)
);
