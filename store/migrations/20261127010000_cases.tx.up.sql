-- Cases (issue 30, API.md §14): the alerts of one incident grouped, worked and closed together.
-- case_number is a per-installation sequence, shown as CASE-<n>. severity is the one set by hand
-- (NULL: derived, the worst severity of its alerts). alert_count, alert_severity (the worst severity
-- of its alerts) and malice (the worst effective malice of its alerts) are maintained by the trigger
-- below, so the list and the case page never aggregate alerts per request (p99 <= 50 ms at 10 000
-- cases / 100 000 alerts, docs/PERFORMANCE.md); effective_severity is what the list shows, filters
-- and sorts on.
CREATE SEQUENCE case_number_seq AS bigint START 1;

--bun:split

CREATE TABLE cases (
    uuid                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    case_number          bigint NOT NULL UNIQUE DEFAULT nextval('case_number_seq'),
    title                text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 500),
    description          text CHECK (char_length(description) <= 50000),
    severity             text CHECK (severity IN ('Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical')),
    alert_severity       text CHECK (alert_severity IN ('Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical')),
    effective_severity   text GENERATED ALWAYS AS (coalesce(severity, alert_severity, 'Pending')) STORED,
    malice               text NOT NULL DEFAULT 'Pending' CHECK (malice IN ('Pending', 'Benign', 'Suspicious', 'Malicious')),
    status               text NOT NULL DEFAULT 'Open' CHECK (status IN ('Open', 'Investigating', 'Closed')),
    assignee             text,
    assigned_at          timestamptz,
    close_classification text,
    tags                 text[] NOT NULL DEFAULT '{}',
    alert_count          integer NOT NULL DEFAULT 0,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    closed_at            timestamptz,
    CONSTRAINT cases_closed_classified CHECK (status <> 'Closed' OR close_classification IS NOT NULL)
);

--bun:split

ALTER SEQUENCE case_number_seq OWNED BY cases.case_number;

--bun:split

-- The list: newest first by default, filtered by status / severity / assignee.
CREATE INDEX cases_updated_idx ON cases (updated_at DESC, uuid DESC);

--bun:split

CREATE INDEX cases_status_idx ON cases (status, updated_at DESC, uuid DESC);

--bun:split

CREATE INDEX cases_severity_idx ON cases (effective_severity, updated_at DESC, uuid DESC);

--bun:split

CREATE INDEX cases_assignee_idx ON cases (assignee, updated_at DESC, uuid DESC) WHERE assignee IS NOT NULL;

--bun:split

-- q matches the title or the description (pg_trgm is installed by the alerts' migrations).
CREATE INDEX cases_title_trgm_idx ON cases USING gin (lower(title) gin_trgm_ops);

--bun:split

-- An alert belongs to at most one case. Deleting a case frees its alerts.
ALTER TABLE alerts ADD COLUMN case_uuid uuid REFERENCES cases (uuid) ON DELETE SET NULL;

--bun:split

-- A case's alerts (the case page, close_alerts, the aggregates below) and GET /v1/alerts?case_uuid=
-- in occurred_at order; also the FK's ON DELETE lookup.
CREATE INDEX alerts_case_idx ON alerts (case_uuid, occurred_at DESC, uuid DESC) WHERE case_uuid IS NOT NULL;

--bun:split

ALTER TABLE comments ADD COLUMN case_uuid uuid REFERENCES cases (uuid) ON DELETE CASCADE;

--bun:split

ALTER TABLE comments DROP CONSTRAINT comments_one_subject;

--bun:split

ALTER TABLE comments ADD CONSTRAINT comments_one_subject CHECK (num_nonnulls(alert_uuid, case_uuid) = 1);

--bun:split

CREATE INDEX comments_case_idx ON comments (case_uuid, created_at, uuid) WHERE case_uuid IS NOT NULL;

--bun:split

-- Case activity: events about the case (created, changed, an alert added or removed). An event
-- about one alert of a case (added to it, grouped into it, removed) carries both uuids: it is on the
-- alert's trail and on the case's. Like alert_uuid, no foreign key: the trail outlives the case.
ALTER TABLE activity_events ADD COLUMN case_uuid uuid;

--bun:split

CREATE INDEX activity_events_case_idx ON activity_events (case_uuid, created_at DESC) WHERE case_uuid IS NOT NULL;

--bun:split

-- Agent events about a case (case.created, case.updated, case.alert_added).
ALTER TABLE agent_events ADD COLUMN case_uuid uuid;

--bun:split

-- The maintained aggregates of one case: its alert count, the worst severity and the worst effective
-- malice of its alerts (the orders of kit/severity and indicators.AlertMalice). Only a changed row
-- is written.
CREATE FUNCTION cases_refresh_aggregates(c uuid) RETURNS void LANGUAGE sql AS $$
    UPDATE cases AS k SET alert_count = s.n, alert_severity = s.sev, malice = s.mal
    FROM (
        SELECT count(*)::integer AS n,
            (ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'])[max(array_position(ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'], a.severity))] AS sev,
            coalesce((ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'])[max(array_position(ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'], a.effective_malice))], 'Pending') AS mal
        FROM alerts AS a WHERE a.case_uuid = c
    ) AS s
    WHERE k.uuid = c AND (k.alert_count, k.alert_severity, k.malice) IS DISTINCT FROM (s.n, s.sev, s.mal);
$$;

--bun:split

-- An alert joining a case (or inserted into one) raises the aggregates in O(1): one more alert, the
-- worse of the case's and the alert's severity and malice; 500 alerts joining in one statement never
-- re-read the case's alerts. An alert leaving a case recomputes that case's.
CREATE FUNCTION cases_alerts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sevs CONSTANT text[] := ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'];
    mals CONSTANT text[] := ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'];
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.case_uuid IS NOT NULL THEN
        PERFORM cases_refresh_aggregates(OLD.case_uuid);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.case_uuid IS NOT NULL THEN
        UPDATE cases SET alert_count = alert_count + 1,
            alert_severity = CASE WHEN alert_severity IS NULL
                    OR coalesce(array_position(sevs, NEW.severity), 0) > coalesce(array_position(sevs, alert_severity), 0)
                THEN NEW.severity ELSE alert_severity END,
            malice = CASE WHEN coalesce(array_position(mals, NEW.effective_malice), 0) > coalesce(array_position(mals, malice), 0)
                THEN NEW.effective_malice ELSE malice END
        WHERE uuid = NEW.case_uuid;
    END IF;
    RETURN NULL;
END;
$$;

--bun:split

-- Each trigger fires only for a row of a case whose membership, severity or malice inputs changed,
-- so ingest and the pipeline's updates of alerts outside cases pay one WHEN test.
CREATE TRIGGER cases_alerts_inserted AFTER INSERT ON alerts
    FOR EACH ROW WHEN (NEW.case_uuid IS NOT NULL) EXECUTE FUNCTION cases_alerts_changed();

--bun:split

CREATE TRIGGER cases_alerts_deleted AFTER DELETE ON alerts
    FOR EACH ROW WHEN (OLD.case_uuid IS NOT NULL) EXECUTE FUNCTION cases_alerts_changed();

--bun:split

CREATE TRIGGER cases_alerts_moved AFTER UPDATE OF case_uuid ON alerts
    FOR EACH ROW WHEN (OLD.case_uuid IS DISTINCT FROM NEW.case_uuid)
    EXECUTE FUNCTION cases_alerts_changed();

--bun:split

CREATE FUNCTION cases_alert_inputs_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM cases_refresh_aggregates(NEW.case_uuid);
    RETURN NULL;
END;
$$;

--bun:split

CREATE TRIGGER cases_alerts_inputs AFTER UPDATE OF severity, indicator_malice, malice_override ON alerts
    FOR EACH ROW WHEN (NEW.case_uuid IS NOT NULL AND OLD.case_uuid IS NOT DISTINCT FROM NEW.case_uuid
        AND (OLD.severity, OLD.indicator_malice, OLD.malice_override) IS DISTINCT FROM (NEW.severity, NEW.indicator_malice, NEW.malice_override))
    EXECUTE FUNCTION cases_alert_inputs_changed();
