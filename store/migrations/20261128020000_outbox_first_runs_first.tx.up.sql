-- The pipeline claim takes an alert's first run before any re-run (issue 26: fresh alerts stayed
-- fresh only until 1 000 re-runs were asked for at once, then waited behind all of them): the due
-- index orders the entries not yet started by whether they are re-runs, then as before (store's
-- claimDueSQL, docs/INGEST.md "Fresh alerts before re-runs").
DROP INDEX alert_outbox_due_idx;

--bun:split

CREATE INDEX alert_outbox_due_idx ON alert_outbox ((kind <> 'pipeline'), not_before, id) WHERE started_at IS NULL;
