-- Agents: AI agents registered with a webhook (API.md §9), and every delivery attempt made to them.
CREATE TABLE agents (
    uuid                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                  text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description           text,
    endpoint_url          text NOT NULL CHECK (char_length(endpoint_url) BETWEEN 1 AND 2048),
    auth_header_name      text,
    -- secretbox-sealed JSON {"value": "..."}; NULL when no auth header is configured.
    auth_header_value     bytea,
    -- secretbox-sealed JSON {"secret": "..."}: the HMAC key deliveries are signed with.
    signing_secret        bytea NOT NULL,
    events                text[] NOT NULL DEFAULT ARRAY['alert.enriched'],
    trigger_on_sources    text[] NOT NULL DEFAULT '{}',
    trigger_on_severities text[] NOT NULL DEFAULT '{}',
    trigger_filter        jsonb,
    timeout_seconds       integer NOT NULL DEFAULT 30 CHECK (timeout_seconds BETWEEN 1 AND 300),
    retry_count           integer NOT NULL DEFAULT 3 CHECK (retry_count BETWEEN 0 AND 10),
    is_active             boolean NOT NULL DEFAULT true,
    documentation         text,
    created_by            text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT agents_auth_header_both CHECK ((auth_header_name IS NULL) = (auth_header_value IS NULL))
);

--bun:split

CREATE UNIQUE INDEX agents_name_key ON agents (lower(name));

--bun:split

CREATE INDEX agents_created_idx ON agents (created_at DESC, uuid DESC);

--bun:split

-- One row per attempt. delivery_uuid is the X-Vigil-Delivery id: the same for every attempt of one
-- delivery, so a receiver can de-duplicate.
CREATE TABLE agent_deliveries (
    uuid          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    delivery_uuid uuid NOT NULL,
    agent_uuid    uuid NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    event         text NOT NULL,
    alert_uuid    uuid,
    attempt       integer NOT NULL CHECK (attempt >= 1),
    status        text NOT NULL CHECK (status IN ('delivered', 'failed', 'gave_up')),
    status_code   integer,
    duration_ms   integer NOT NULL DEFAULT 0,
    error         text,
    created_at    timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX agent_deliveries_agent_idx ON agent_deliveries (agent_uuid, created_at DESC, uuid DESC);

--bun:split

CREATE INDEX agent_deliveries_alert_idx ON agent_deliveries (alert_uuid) WHERE alert_uuid IS NOT NULL;
