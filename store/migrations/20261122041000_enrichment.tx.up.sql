-- Enrichment: providers (builtin and custom), field extractions, the shared result cache and the
-- per-provider rate state used to space calls durably.
CREATE TABLE enrichment_providers (
    uuid                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    provider_name             text NOT NULL CHECK (provider_name ~ '^[a-z0-9_]+$' AND char_length(provider_name) <= 100),
    display_name              text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 200),
    description               text NOT NULL DEFAULT '',
    is_builtin                boolean NOT NULL DEFAULT false,
    is_active                 boolean NOT NULL DEFAULT true,
    supported_indicator_types text[] NOT NULL DEFAULT '{}',
    http_config               jsonb NOT NULL,
    auth_type                 text NOT NULL DEFAULT 'none',
    auth_config_sealed        bytea,
    env_var_mapping           jsonb NOT NULL DEFAULT '{}',
    default_cache_ttl_seconds integer NOT NULL DEFAULT 3600 CHECK (default_cache_ttl_seconds BETWEEN 0 AND 86400),
    cache_ttl_by_type         jsonb NOT NULL DEFAULT '{}',
    malice_rules              jsonb NOT NULL DEFAULT '{}',
    rate_limit                jsonb,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT enrichment_providers_name_key UNIQUE (provider_name)
);

--bun:split

CREATE INDEX enrichment_providers_active_idx ON enrichment_providers (is_active, provider_name);

--bun:split

CREATE INDEX enrichment_providers_builtin_idx ON enrichment_providers (is_builtin, provider_name);

--bun:split

CREATE INDEX enrichment_providers_types_idx ON enrichment_providers USING gin (supported_indicator_types);

--bun:split

CREATE TABLE enrichment_field_extractions (
    uuid           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    provider_name  text NOT NULL CHECK (provider_name ~ '^[a-z0-9_]+$'),
    indicator_type text NOT NULL CHECK (indicator_type IN ('ip', 'domain', 'hash_md5', 'hash_sha1', 'hash_sha256', 'url', 'email', 'account')),
    source_path    text NOT NULL CHECK (char_length(source_path) BETWEEN 1 AND 500),
    target_key     text NOT NULL CHECK (char_length(target_key) BETWEEN 1 AND 200),
    value_type     text NOT NULL CHECK (value_type IN ('string', 'int', 'float', 'bool', 'list', 'dict', 'any')),
    description    text NOT NULL DEFAULT '',
    is_system      boolean NOT NULL DEFAULT false,
    is_active      boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT enrichment_field_extractions_key UNIQUE (provider_name, indicator_type, target_key)
);

--bun:split

CREATE INDEX enrichment_field_extractions_type_idx ON enrichment_field_extractions (indicator_type, provider_name);

--bun:split

CREATE INDEX enrichment_field_extractions_flags_idx ON enrichment_field_extractions (is_active, is_system);

--bun:split

CREATE TABLE enrichment_cache (
    provider_name  text NOT NULL,
    indicator_type text NOT NULL,
    value          text NOT NULL,
    result         jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (provider_name, indicator_type, value)
);

--bun:split

CREATE INDEX enrichment_cache_expires_idx ON enrichment_cache (expires_at);

--bun:split

CREATE TABLE enrichment_rate_state (
    provider_name text PRIMARY KEY,
    next_slot     timestamptz NOT NULL,
    day           date NOT NULL,
    day_count     integer NOT NULL DEFAULT 0
);
