CREATE EXTENSION IF NOT EXISTS pgcrypto;

--bun:split

CREATE TABLE api_keys (
    uuid                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                  text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    key_hash              bytea NOT NULL,
    key_prefix            text NOT NULL,
    scopes                text[] NOT NULL,
    key_type              text NOT NULL DEFAULT 'human' CHECK (key_type IN ('human', 'agent')),
    allowed_sources       text[],
    rate_limit_per_minute integer CHECK (rate_limit_per_minute BETWEEN 1 AND 1000000),
    is_active             boolean NOT NULL DEFAULT true,
    expires_at            timestamptz,
    last_used_at          timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);

--bun:split

CREATE INDEX api_keys_created_at_idx ON api_keys (created_at DESC, uuid DESC);

--bun:split

CREATE TABLE activity_events (
    uuid                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    event_type          text NOT NULL,
    actor_type          text NOT NULL CHECK (actor_type IN ('system', 'api', 'mcp', 'workflow')),
    actor_key_prefix    text,
    alert_uuid          uuid,
    workflow_uuid       uuid,
    detection_rule_uuid uuid,
    "references"        jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at          timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX activity_events_alert_idx ON activity_events (alert_uuid, created_at DESC) WHERE alert_uuid IS NOT NULL;

--bun:split

CREATE INDEX activity_events_created_idx ON activity_events (created_at DESC);

--bun:split

-- Fixed-window request counters shared by API replicas (RATE_LIMIT_STORE=postgres). Unlogged: a
-- crash resets the current minute's counters, which is harmless.
CREATE UNLOGGED TABLE rate_limit_windows (
    bucket       text NOT NULL,
    window_start timestamptz NOT NULL,
    count        integer NOT NULL,
    PRIMARY KEY (bucket, window_start)
);
