-- Agent events: one row per event raised (API.md §9), committed in the transaction of the change that
-- raises it. The DeliverEvent workflow (id event-<uuid>) plans the deliveries once and fills payload,
-- so every attempt of every delivery carries the same data.
CREATE TABLE agent_events (
    uuid         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    event        text NOT NULL CHECK (char_length(event) BETWEEN 1 AND 100),
    alert_uuid   uuid,
    -- dispatch-agent: the one agent this event goes to, its filters bypassed; NULL: every match.
    target_agent uuid REFERENCES agents (uuid) ON DELETE CASCADE,
    -- Facts of the change known when it committed (e.g. the fields an alert.updated changed).
    facts        jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- The payload's data, built once when the deliveries are planned; NULL until then.
    payload      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX agent_events_alert_idx ON agent_events (alert_uuid, created_at) WHERE alert_uuid IS NOT NULL;

--bun:split

CREATE INDEX agents_events_gin ON agents USING gin (events) WHERE is_active;
