-- The server embedded method texts through its query cache, which normalised them as
-- queries: under the builtin hybrid model, a method's stored vector read all its fields
-- as one query instead of weighing them apart. Forget those vectors' text hashes, so the
-- next embedding sync makes each again from the method's text as written (they keep
-- answering until then). A provider's vectors are kept: its model reads the text whole
-- either way, and embedding the catalog again would cost its calls.
UPDATE method_embeddings SET text_hash = '\x'::bytea WHERE model_id = 'builtin:hybrid-v1';
