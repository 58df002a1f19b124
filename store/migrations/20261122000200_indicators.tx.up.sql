-- Indicators are global and unique on (type, value); alerts link to them (see the alerts migration).
CREATE TABLE indicators (
    uuid                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    type                 text NOT NULL CHECK (type IN ('ip', 'domain', 'hash_md5', 'hash_sha1', 'hash_sha256', 'url', 'email', 'account')),
    value                text NOT NULL CHECK (char_length(value) BETWEEN 1 AND 2048),
    first_seen           timestamptz NOT NULL DEFAULT now(),
    last_seen            timestamptz NOT NULL DEFAULT now(),
    is_enriched          boolean NOT NULL DEFAULT false,
    malice               text NOT NULL DEFAULT 'Pending' CHECK (malice IN ('Pending', 'Benign', 'Suspicious', 'Malicious')),
    malice_source        text,
    malice_overridden_at timestamptz,
    enrichment_results   jsonb,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT indicators_type_value_key UNIQUE (type, value)
);

--bun:split

CREATE INDEX indicators_last_seen_idx ON indicators (last_seen DESC, uuid);

--bun:split

CREATE INDEX indicators_value_prefix_idx ON indicators (value text_pattern_ops);

--bun:split

CREATE INDEX indicators_malice_idx ON indicators (malice, last_seen DESC);
