-- A model's calibrated band (search.Calibration as JSON: the logistic weights of the
-- query's evidence by feature name, the least probability answered at, the margin).
-- A model with one answers with it instead of its floor and margin.
ALTER TABLE embedding_models ADD COLUMN calibration jsonb;
