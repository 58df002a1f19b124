-- The pipeline claim takes first runs and re-runs in two index scans, each stopping at its LIMIT
-- (store's claimDueSQL: re-runs are capped apart while alerts arrive, docs/INGEST.md "Re-runs hold at
-- most …"). On the expression index of 20261128020000 the planner turned the first runs' condition
-- into kind = 'pipeline' and read every due row (27 ms behind 100 000 due re-runs, against 0.5 ms on
-- this index: EXPLAIN ANALYZE of the first runs' scan). The outbox has two kinds; the check keeps it
-- so, since a third would be claimed by neither scan.
ALTER TABLE alert_outbox ADD CONSTRAINT alert_outbox_kind_check CHECK (kind IN ('pipeline', 'rerun'));

--bun:split

DROP INDEX alert_outbox_due_idx;

--bun:split

CREATE INDEX alert_outbox_due_idx ON alert_outbox (kind, not_before, id) WHERE started_at IS NULL;
