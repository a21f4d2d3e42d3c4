-- Search: each embedding model's record holds its similarity band; every enabled
-- method has one vector per model (method_embeddings, from 001), indexed by a partial
-- HNSW index per model that the service creates when it registers the model (the
-- index casts to the model's dimensions, which only the model knows).

ALTER TABLE embedding_models
    ADD CONSTRAINT embedding_models_id CHECK (id ~ '^[A-Za-z0-9:._/-]{1,100}$'),
    ADD CONSTRAINT embedding_models_floor CHECK (similarity_floor BETWEEN -1 AND 1),
    ADD CONSTRAINT embedding_models_margin CHECK (similarity_margin BETWEEN 0 AND 2),
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

-- Backfill finds the methods whose vector is missing or stale by method.
CREATE INDEX method_embeddings_method ON method_embeddings (method_id);

-- The daily allowance of novel query embeddings, shared by every replica: one row per
-- UTC day, counted up atomically while under the limit.
CREATE TABLE search_allowance (
    day  date PRIMARY KEY,
    used integer NOT NULL CHECK (used >= 0)
);
