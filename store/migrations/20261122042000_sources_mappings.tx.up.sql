-- Source plugins (one row per plugin the platform knows, seeded idempotently at start so each has a
-- uuid and timestamps), their integrations (secret, active flag, severity overrides) and the
-- indicator mappings of extraction passes 2 and 3.
CREATE TABLE sources (
    uuid          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source_name   text NOT NULL UNIQUE,
    display_name  text NOT NULL,
    is_active     boolean NOT NULL DEFAULT true,
    auth_type     text NOT NULL,
    documentation text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

--bun:split

-- One integration per source: ingestion reads it by source_name on every request.
CREATE TABLE source_integrations (
    uuid             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source_name      text NOT NULL,
    display_name     text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 200),
    is_active        boolean NOT NULL DEFAULT true,
    auth_type        text NOT NULL CHECK (auth_type IN ('none', 'hmac_sha256', 'shared_token')),
    -- secretbox-sealed JSON {"secret": "..."}; NULL when no secret is configured.
    auth_config      bytea,
    severity_mapping jsonb NOT NULL DEFAULT '{}'::jsonb,
    documentation    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT source_integrations_source_name_key UNIQUE (source_name)
);

--bun:split

CREATE INDEX source_integrations_created_idx ON source_integrations (created_at DESC, uuid DESC);

--bun:split

CREATE TABLE indicator_mappings (
    uuid              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source_name       text,
    field_path        text NOT NULL CHECK (char_length(field_path) BETWEEN 1 AND 500),
    indicator_type    text NOT NULL CHECK (indicator_type IN ('ip', 'domain', 'hash_md5', 'hash_sha1', 'hash_sha256', 'url', 'email', 'account')),
    extraction_target text NOT NULL CHECK (extraction_target IN ('normalized', 'raw_payload')),
    is_active         boolean NOT NULL DEFAULT true,
    is_system         boolean NOT NULL DEFAULT false,
    description       text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

--bun:split

-- One mapping per (source, path, type, target): re-seeding system rows and re-posting a mapping are
-- idempotent / 409.
CREATE UNIQUE INDEX indicator_mappings_rule_key ON indicator_mappings
    (coalesce(source_name, ''), field_path, indicator_type, extraction_target);

--bun:split

CREATE INDEX indicator_mappings_created_idx ON indicator_mappings (created_at, uuid);
