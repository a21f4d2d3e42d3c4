-- The builtin hybrid's band was fitted again over every labelled query, the older ones
-- and 151 newer ones written from the need by a stranger to the catalog (its rerank
-- weight is now 0.5). The evidence recipe is unchanged, so a stored band is kept at
-- registration and the builtin's earlier one would go on answering. Forget it, so that
-- the next start stores the new one; an operator who calibrated the builtin runs make
-- calibrate again. A provider's band is kept.
UPDATE embedding_models SET calibration = NULL WHERE id = 'builtin:hybrid-v1';
