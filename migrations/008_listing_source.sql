-- Methods imported from a discovery listing (the x402 Bazaar): which listing they come
-- from, so that a complete sync disables only what that listing no longer holds and
-- never a method from anywhere else; the MCP tool, since an MCP server lists all its
-- tools at one URL; and what the listing reports of the method: its own counts of paid
-- calls and payers over 30 days, its last call and its last update. Those are the
-- listing's word, kept apart from settled_payments, which the service observes.

ALTER TABLE provider_methods
    ADD COLUMN source                text CHECK (source <> ''),
    ADD COLUMN tool_name             text NOT NULL DEFAULT '',
    ADD COLUMN listed_calls_30d      bigint CHECK (listed_calls_30d >= 0),
    ADD COLUMN listed_payers_30d     bigint CHECK (listed_payers_30d >= 0),
    ADD COLUMN listed_last_called_at timestamptz,
    ADD COLUMN listed_updated_at     timestamptz;

-- A method of a listing is known by its resource URL and tool together.
ALTER TABLE provider_methods DROP CONSTRAINT provider_methods_source_key_key;
ALTER TABLE provider_methods ADD CONSTRAINT provider_methods_source_key_tool UNIQUE (source_key, tool_name);

-- Until now only the Bazaar importer set a source key.
UPDATE provider_methods SET source = 'x402-bazaar' WHERE source_key IS NOT NULL;

-- A sync reads the enabled methods of its source.
CREATE INDEX provider_methods_source ON provider_methods (source) WHERE source IS NOT NULL;
