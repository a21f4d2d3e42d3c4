-- The builtin hybrid's band now reranks the nearest methods by the query's concepts
-- before it reads their evidence, with weights fitted over that ranking. The evidence
-- recipe is unchanged, so a stored band is kept at registration and the builtin's
-- earlier one (no rerank, weights fitted over the ranking by similarity) would go on
-- answering. Forget it, so that the next start stores the new one; an operator who
-- calibrated the builtin runs make calibrate again to rerank too. A provider's band
-- is kept: it answers as before, ranked by similarity, until make calibrate.
UPDATE embedding_models SET calibration = NULL WHERE id = 'builtin:hybrid-v1';
