-- Why an invalid_offer probe's answer could not be paid, as the code the prober's offer
-- reader gives (no_document, bad_extra, ...), so that the trust block can name it.
-- Earlier probes wrote the code only into the detail text, "x402 offer: <code>: ...".

ALTER TABLE probes ADD COLUMN reason text NOT NULL DEFAULT '';

UPDATE probes
SET reason = substring(detail FROM '^x402 offer: ([a-z0-9_]+)')
WHERE outcome = 'invalid_offer' AND detail ~ '^x402 offer: [a-z0-9_]+';
