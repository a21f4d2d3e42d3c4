-- The builtin hybrid's band now reranks the nearest forty methods (twenty before) by
-- the query's concepts, under weights up to 1.5, and its weights were fitted over that
-- ranking. The evidence recipe is unchanged, so a stored band is kept at registration
-- and the builtin's earlier one would go on answering. Forget it, so that the next
-- start stores the new one; an operator who calibrated the builtin runs make calibrate
-- again. A provider's band is kept: it answers as before, over the wider rerank,
-- until make calibrate.
UPDATE embedding_models SET calibration = NULL WHERE id = 'builtin:hybrid-v1';
