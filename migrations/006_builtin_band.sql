-- The server registered the builtin model with a looser band (floor 0.16, margin 0.12)
-- than the one make eval tuned and the search package states (0.27, 0.20). A row that
-- still holds the old defaults gets the tuned band; one an operator changed is left.
UPDATE embedding_models
SET similarity_floor = 0.27, similarity_margin = 0.20, updated_at = now()
WHERE id = 'builtin:lexhash-v1'
  AND abs(similarity_floor - 0.16) < 1e-6
  AND abs(similarity_margin - 0.12) < 1e-6;
