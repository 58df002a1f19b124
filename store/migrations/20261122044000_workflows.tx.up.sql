-- Response workflows: definitions with their versions, named secrets, runs, approval requests and
-- the decisions on them (API.md §8).
CREATE TABLE workflows (
    uuid                           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                           text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description                    text,
    documentation                  text,
    workflow_type                  text NOT NULL DEFAULT 'indicator' CHECK (workflow_type IN ('indicator', 'alert')),
    indicator_types                text[] NOT NULL DEFAULT '{}',
    state                          text NOT NULL DEFAULT 'draft' CHECK (state IN ('draft', 'active', 'inactive')),
    steps                          jsonb NOT NULL,
    timeout_seconds                integer NOT NULL DEFAULT 300 CHECK (timeout_seconds BETWEEN 1 AND 86400),
    retry_max_attempts             integer NOT NULL DEFAULT 3 CHECK (retry_max_attempts BETWEEN 1 AND 20),
    retry_initial_interval_seconds integer NOT NULL DEFAULT 1 CHECK (retry_initial_interval_seconds BETWEEN 1 AND 3600),
    approval_mode                  text NOT NULL DEFAULT 'always' CHECK (approval_mode IN ('always', 'agent_only', 'never')),
    approval_timeout_seconds       integer NOT NULL DEFAULT 3600 CHECK (approval_timeout_seconds BETWEEN 1 AND 604800),
    approval_channel               text,
    required_approvals             integer NOT NULL DEFAULT 1 CHECK (required_approvals BETWEEN 1 AND 10),
    risk_level                     text NOT NULL DEFAULT 'medium' CHECK (risk_level IN ('low', 'medium', 'high', 'critical')),
    tags                           text[] NOT NULL DEFAULT '{}',
    time_saved_minutes             integer,
    is_system                      boolean NOT NULL DEFAULT false,
    system_key                     text UNIQUE,
    required_secrets               text[] NOT NULL DEFAULT '{}',
    version                        integer NOT NULL DEFAULT 1,
    deleted_at                     timestamptz,
    created_at                     timestamptz NOT NULL DEFAULT now(),
    updated_at                     timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX workflows_created_idx ON workflows (created_at DESC, uuid DESC) WHERE deleted_at IS NULL;

--bun:split

CREATE TABLE workflow_versions (
    workflow_uuid uuid NOT NULL REFERENCES workflows (uuid) ON DELETE CASCADE,
    version       integer NOT NULL,
    definition    jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_uuid, version)
);

--bun:split

CREATE TABLE workflow_secrets (
    name         text PRIMARY KEY CHECK (name ~ '^[A-Z][A-Z0-9_]{0,63}$'),
    value_sealed bytea NOT NULL,
    description  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE TABLE workflow_runs (
    uuid                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workflow_uuid         uuid NOT NULL REFERENCES workflows (uuid),
    workflow_version      integer NOT NULL,
    status                text NOT NULL CHECK (status IN ('queued', 'pending_approval', 'running', 'succeeded', 'failed',
                              'timed_out', 'rejected', 'expired', 'cancelled')),
    trigger_source        text NOT NULL CHECK (trigger_source IN ('human', 'agent')),
    trigger_key_uuid      uuid,
    trigger_key_prefix    text,
    reason                text,
    confidence            double precision CHECK (confidence BETWEEN 0 AND 1),
    indicator_type        text NOT NULL,
    indicator_value       text NOT NULL,
    alert_uuid            uuid,
    approval_request_uuid uuid,
    idempotency_key       text,
    steps                 jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- Unmasked step outputs (steps.<name>.*) for later steps, sealed under ENCRYPTION_KEY.
    step_state            bytea,
    result                jsonb,
    error                 text,
    attempt_count         integer NOT NULL DEFAULT 0,
    duration_ms           bigint,
    started_at            timestamptz,
    completed_at          timestamptz,
    temporal_workflow_id  text NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE UNIQUE INDEX workflow_runs_idempotency_key ON workflow_runs (trigger_key_uuid, workflow_uuid, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

--bun:split

CREATE INDEX workflow_runs_created_idx ON workflow_runs (created_at DESC, uuid DESC);

--bun:split

CREATE INDEX workflow_runs_workflow_idx ON workflow_runs (workflow_uuid, created_at DESC);

--bun:split

CREATE TABLE workflow_approval_requests (
    uuid               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workflow_uuid      uuid NOT NULL REFERENCES workflows (uuid),
    workflow_name      text NOT NULL,
    run_uuid           uuid NOT NULL UNIQUE REFERENCES workflow_runs (uuid),
    trigger_source     text NOT NULL,
    trigger_key_uuid   uuid,
    trigger_key_prefix text,
    reason             text,
    confidence         double precision,
    indicator_type     text NOT NULL,
    indicator_value    text NOT NULL,
    risk_level         text NOT NULL,
    status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
    required_approvals integer NOT NULL DEFAULT 1,
    expires_at         timestamptz NOT NULL,
    notifier_type      text NOT NULL DEFAULT 'none',
    notifier_channel   text,
    notified_at        timestamptz,
    -- SHA-256 of the single-use decide-page token; NULL once used (or before one is issued).
    decide_token_hash  bytea,
    rejection_reason   text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX workflow_approval_requests_created_idx ON workflow_approval_requests (created_at DESC, uuid DESC);

--bun:split

CREATE TABLE workflow_approval_decisions (
    approval_uuid uuid NOT NULL REFERENCES workflow_approval_requests (uuid) ON DELETE CASCADE,
    -- Who decided, as counted for the quorum: key:<uuid>, slack:<team>:<user>, or decide-page:<approval>.
    identity      text NOT NULL,
    responder_id  text NOT NULL,
    decision      text NOT NULL CHECK (decision IN ('approved', 'rejected')),
    comment       text,
    decided_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (approval_uuid, identity)
);
