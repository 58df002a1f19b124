-- Provider circuit breakers and the alerts waiting for a provider to answer again (issue 16 item 5,
-- docs/ENRICHMENT.md "Provider outages"). Shared by every worker: the state lives here, not in a
-- process. No row in provider_circuits = closed with no failure counted.
CREATE TABLE provider_circuits (
    provider_name text PRIMARY KEY,
    failures      integer NOT NULL DEFAULT 0,   -- consecutive failed calls
    opened_at     timestamptz,                  -- NULL: closed
    retry_at      timestamptz,                  -- open: when one half-open probe may go out
    probe_until   timestamptz,                  -- half-open: the probe in flight holds it until then
    updated_at    timestamptz NOT NULL DEFAULT now()
);

--bun:split

-- An alert whose enrichment by provider_name failed (or was refused by the open circuit): re-run once
-- the provider answers again. reruns counts the re-runs that failed again (bounded), rerun_at marks
-- one queued in alert_outbox.
CREATE TABLE enrichment_parked (
    provider_name text NOT NULL,
    alert_uuid    uuid NOT NULL REFERENCES alerts (uuid) ON DELETE CASCADE,
    parked_at     timestamptz NOT NULL DEFAULT now(),
    reruns        integer NOT NULL DEFAULT 0,
    rerun_at      timestamptz,
    PRIMARY KEY (provider_name, alert_uuid)
);

--bun:split

CREATE INDEX enrichment_parked_alert_idx ON enrichment_parked (alert_uuid);
