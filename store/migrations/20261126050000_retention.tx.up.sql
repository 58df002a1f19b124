-- Retention (API.md §15, docs/OPERATIONS.md "Retention"): the hourly pass finds what it may forget
-- through two partial indexes, so a pass over a large table reads only its candidates, and each pass
-- keeps its cutoffs and counts in retention_passes, updated in the transaction of every batch: a pass
-- resumed after a worker died goes on with the same cutoffs and its counts stay exact.
CREATE INDEX alerts_retention_closed_idx ON alerts (closed_at) WHERE status = 'Closed';

--bun:split

-- An alert leaves this index once its payload is cleared, so later passes skip it.
CREATE INDEX alerts_retention_raw_idx ON alerts (ingested_at)
    WHERE raw_payload IS NOT NULL OR original_body IS NOT NULL;

--bun:split

-- alert_fingerprints references alerts ON DELETE CASCADE without an index on alert_uuid: each
-- deleted alert would scan the whole table. Retention deletes alerts by the thousand.
CREATE INDEX alert_fingerprints_alert_idx ON alert_fingerprints (alert_uuid);

--bun:split

CREATE TABLE retention_passes (
    pass_id            text PRIMARY KEY CHECK (char_length(pass_id) BETWEEN 1 AND 300),
    -- NULL: that kind is kept (its setting is 0).
    raw_payload_cutoff timestamptz,
    alert_cutoff       timestamptz,
    audit_cutoff       timestamptz,
    -- Rows purged so far, by kind (raw_payloads, alerts, alert_indicators, indicators, ...).
    counts             jsonb NOT NULL DEFAULT '{}'::jsonb,
    started_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz
);

--bun:split

CREATE INDEX retention_passes_started_idx ON retention_passes (started_at DESC);
