-- Pipelines in flight: the dispatcher marks a row started instead of deleting it, and the pipeline
-- deletes it when it finishes. The count of started rows caps how many pipelines run at once, so a
-- backlog waits here (cheap) rather than in Temporal (DESIGN.md "Ingest path", docs/INGEST.md).
ALTER TABLE alert_outbox ADD COLUMN started_at timestamptz;

--bun:split

DROP INDEX alert_outbox_due_idx;

--bun:split

CREATE INDEX alert_outbox_due_idx ON alert_outbox (not_before, id) WHERE started_at IS NULL;

--bun:split

CREATE INDEX alert_outbox_started_idx ON alert_outbox (started_at) WHERE started_at IS NOT NULL;

--bun:split

CREATE INDEX alert_outbox_alert_idx ON alert_outbox (alert_uuid);
