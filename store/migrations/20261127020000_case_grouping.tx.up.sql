-- The pipeline's grouping of alerts into cases (issue 30 item 2, API.md §14 "Grouping"; store/grouping.go):
-- a finishing alert looks for the open cases of the alerts that share its Malicious or Suspicious
-- indicators. Walking every link of such an indicator (alert_indicators_indicator_idx) would cost the
-- finish as many rows as alerts ever linked to it -- a busy C2 address links thousands, and nearly
-- none of them is in a case. alert_indicators.case_uuid copies the case of the link's alert, and a
-- partial index holds only the links of alerts that are in a case, so the lookup reads only those.
-- Postgres keeps the copy (nothing in Go writes it): when an alert's case_uuid changes (a join, a
-- move, a removal, a deleted case's ON DELETE SET NULL) its links follow, and a new link takes its
-- alert's case. No foreign key: the copy follows alerts.case_uuid, which has one.
ALTER TABLE alert_indicators ADD COLUMN case_uuid uuid;

--bun:split

UPDATE alert_indicators AS ai SET case_uuid = a.case_uuid
FROM alerts AS a
WHERE a.uuid = ai.alert_uuid AND a.case_uuid IS NOT NULL;

--bun:split

CREATE INDEX alert_indicators_case_idx ON alert_indicators (indicator_uuid, case_uuid, alert_uuid) WHERE case_uuid IS NOT NULL;

--bun:split

CREATE FUNCTION alert_indicators_follow_case() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE alert_indicators SET case_uuid = NEW.case_uuid
    WHERE alert_uuid = NEW.uuid AND case_uuid IS DISTINCT FROM NEW.case_uuid;
    RETURN NULL;
END;
$$;

--bun:split

CREATE TRIGGER alert_indicators_follow_case AFTER UPDATE OF case_uuid ON alerts
    FOR EACH ROW WHEN (OLD.case_uuid IS DISTINCT FROM NEW.case_uuid)
    EXECUTE FUNCTION alert_indicators_follow_case();

--bun:split

-- A link added to an alert already in a case (POST /v1/alerts/{uuid}/indicators, a re-run's
-- extraction) takes the case at once. One statement per INSERT statement, not per row: the links of
-- alerts outside a case (every link the pipeline makes before grouping, and bulk seeds) find no
-- alert among the few in cases (alerts_case_idx), write nothing, keep NULL and stay out of the index.
CREATE FUNCTION alert_indicators_take_case() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE alert_indicators AS ai SET case_uuid = a.case_uuid
    FROM new_links AS n JOIN alerts AS a ON a.uuid = n.alert_uuid
    WHERE a.case_uuid IS NOT NULL AND ai.alert_uuid = n.alert_uuid AND ai.indicator_uuid = n.indicator_uuid
        AND ai.case_uuid IS DISTINCT FROM a.case_uuid;
    RETURN NULL;
END;
$$;

--bun:split

CREATE TRIGGER alert_indicators_take_case AFTER INSERT ON alert_indicators
    REFERENCING NEW TABLE AS new_links
    FOR EACH STATEMENT EXECUTE FUNCTION alert_indicators_take_case();
