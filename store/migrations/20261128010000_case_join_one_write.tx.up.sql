-- An alert joining a case writes the case's row once (issue 30: the grouping's cost per alert): the
-- case's updated_at moves in the aggregates' own update, to the joining alert's updated_at (every
-- join writes it with the alert's case_uuid: store.caseJoin), where the join used to move it in a
-- statement of its own -- two versions of the case row per join, one of them through all nine of the
-- cases table's indexes, and the row's lock held for both. Otherwise as 20261127010000_cases.
CREATE OR REPLACE FUNCTION cases_alerts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
                THEN NEW.effective_malice ELSE malice END,
            updated_at = greatest(updated_at, NEW.updated_at)
        WHERE uuid = NEW.case_uuid;
    END IF;
    RETURN NULL;
END;
$$;
