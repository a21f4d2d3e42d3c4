-- An origin's word covers the origin it proved (scheme, hostname and port), never its
-- neighbours: a listing's copy gives way to an origin's own listing only when its
-- endpoint is on that origin, not merely on the same hostname. endpoint_origin is the
-- endpoint URL's origin in the canonical form origins.origin is kept in: scheme and
-- host in lower case, no user information, no default port. A URL whose host is not
-- spelled as the origin's (an IDN in Unicode, say) matches none, and its copy stays
-- listed: the mistake that lists too much, never the one that hides a neighbour.
CREATE FUNCTION url_origin(url text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
        SELECT regexp_replace(regexp_replace(regexp_replace(
            lower(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')),
            '^([a-z0-9+.-]+://)[^@]*@', '\1'),
            '^(https://[^:]*):443$', '\1'),
            '^(http://[^:]*):80$', '\1')
    $$;

ALTER TABLE provider_methods
    ADD COLUMN endpoint_origin text GENERATED ALWAYS AS (url_origin(endpoint_url)) STORED;
