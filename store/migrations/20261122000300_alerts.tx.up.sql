-- Detection rules, alerts and their links. Internal integer ids appear in responses only as an
-- alert's detection_rule_id (SEED-SPEC §2.1).
CREATE TABLE detection_rules (
    id                  bigserial PRIMARY KEY,
    uuid                uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    name                text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 500),
    source_rule_id      text,
    source_name         text,
    severity            text CHECK (severity IN ('Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical')),
    is_active           boolean NOT NULL DEFAULT true,
    is_stub             boolean NOT NULL DEFAULT false,
    mitre_tactics       text[] NOT NULL DEFAULT '{}',
    mitre_techniques    text[] NOT NULL DEFAULT '{}',
    mitre_subtechniques text[] NOT NULL DEFAULT '{}',
    data_sources        text[] NOT NULL DEFAULT '{}',
    run_frequency       text,
    created_by          text,
    documentation       text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

--bun:split

-- One rule per source reference, so concurrent pipelines create one stub.
CREATE UNIQUE INDEX detection_rules_source_ref_key ON detection_rules (source_name, source_rule_id)
    WHERE source_name IS NOT NULL AND source_rule_id IS NOT NULL;

--bun:split

CREATE INDEX detection_rules_name_idx ON detection_rules (lower(name));

--bun:split

CREATE INDEX detection_rules_created_idx ON detection_rules (created_at DESC, id DESC);

--bun:split

CREATE TABLE alerts (
    uuid                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title                  text NOT NULL,
    severity               text NOT NULL CHECK (severity IN ('Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical')),
    status                 text NOT NULL DEFAULT 'Open' CHECK (status IN ('Open', 'Triaging', 'Escalated', 'Closed')),
    enrichment_status      text NOT NULL DEFAULT 'Pending' CHECK (enrichment_status IN ('Pending', 'Enriched', 'Failed')),
    source_name            text NOT NULL,
    occurred_at            timestamptz NOT NULL,
    ingested_at            timestamptz NOT NULL DEFAULT now(),
    enriched_at            timestamptz,
    is_enriched            boolean NOT NULL DEFAULT false,
    fingerprint            text,
    close_classification   text CHECK (close_classification IN (
        'True Positive - Suspicious Activity', 'Benign Positive - Suspicious but Expected',
        'False Positive - Incorrect Detection Logic', 'False Positive - Inaccurate Data',
        'Undetermined', 'Duplicate', 'Not Applicable')),
    acknowledged_at        timestamptz,
    triaged_at             timestamptz,
    closed_at              timestamptz,
    tags                   text[] NOT NULL DEFAULT '{}',
    detection_rule_id      bigint REFERENCES detection_rules (id) ON DELETE SET NULL,
    description            text,
    duplicate_count        integer NOT NULL DEFAULT 0,
    last_seen_at           timestamptz,
    raw_payload            jsonb,
    -- What the source plugin made of the payload (normalized fields, rule reference, pass-1
    -- indicators), so the pipeline never re-parses the raw payload for them.
    normalized             jsonb NOT NULL DEFAULT '{}'::jsonb,
    malice_override        text CHECK (malice_override IN ('Pending', 'Benign', 'Suspicious', 'Malicious')),
    malice_override_source text,
    malice_override_at     timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX alerts_occurred_idx ON alerts (occurred_at DESC, uuid DESC);

--bun:split

CREATE INDEX alerts_created_idx ON alerts (created_at DESC, uuid DESC);

--bun:split

CREATE INDEX alerts_status_idx ON alerts (status, occurred_at DESC);

--bun:split

CREATE INDEX alerts_severity_idx ON alerts (severity, occurred_at DESC);

--bun:split

CREATE INDEX alerts_source_idx ON alerts (source_name, occurred_at DESC);

--bun:split

CREATE INDEX alerts_enrichment_status_idx ON alerts (enrichment_status, occurred_at DESC);

--bun:split

CREATE INDEX alerts_rule_idx ON alerts (detection_rule_id, occurred_at DESC) WHERE detection_rule_id IS NOT NULL;

--bun:split

CREATE INDEX alerts_tags_idx ON alerts USING gin (tags);

--bun:split

CREATE INDEX alerts_title_lower_idx ON alerts (lower(title) text_pattern_ops);

--bun:split

-- Dedup is enforced here: one row per fingerprint holds the alert that owns the current window.
-- Ingest inserts or, when the window has passed, takes the row over (INSERT ... ON CONFLICT DO UPDATE
-- ... WHERE created_at < window start), so two concurrent identical ingests make one alert.
CREATE TABLE alert_fingerprints (
    fingerprint text PRIMARY KEY,
    alert_uuid  uuid NOT NULL REFERENCES alerts (uuid) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE TABLE alert_indicators (
    alert_uuid     uuid NOT NULL REFERENCES alerts (uuid) ON DELETE CASCADE,
    indicator_uuid uuid NOT NULL REFERENCES indicators (uuid) ON DELETE CASCADE,
    source         text NOT NULL DEFAULT 'extraction', -- extraction pass or 'api'
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (alert_uuid, indicator_uuid)
);

--bun:split

CREATE INDEX alert_indicators_indicator_idx ON alert_indicators (indicator_uuid, alert_uuid);

--bun:split

-- The outbox: a row committed with its alert; the worker's dispatcher starts the pipeline from it
-- and deletes it (FOR UPDATE SKIP LOCKED). kind is 'pipeline' for now.
CREATE TABLE alert_outbox (
    id         bigserial PRIMARY KEY,
    alert_uuid uuid NOT NULL,
    kind       text NOT NULL DEFAULT 'pipeline',
    attempts   integer NOT NULL DEFAULT 0,
    not_before timestamptz NOT NULL DEFAULT now(),
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX alert_outbox_due_idx ON alert_outbox (not_before, id);

--bun:split

CREATE TABLE alert_findings (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    alert_uuid         uuid NOT NULL REFERENCES alerts (uuid) ON DELETE CASCADE,
    agent_name         text NOT NULL,
    summary            text NOT NULL,
    confidence         text CHECK (confidence IN ('low', 'medium', 'high')),
    recommended_action text,
    evidence           jsonb,
    actor_key_prefix   text,
    posted_at          timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX alert_findings_alert_idx ON alert_findings (alert_uuid, posted_at);
