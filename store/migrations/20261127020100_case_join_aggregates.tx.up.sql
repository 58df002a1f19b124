-- An alert joining a case adds itself to the case's maintained aggregates instead of recounting the
-- case (issue 30 item 2, docs/INGEST.md "Grouping into cases"). 20261127010000's trigger recomputed
-- alert_count, alert_severity and malice over every alert of the case on each join: the grouping
-- joins one alert per finish, so a case that grew to n alerts cost its n-th join a scan of n alerts,
-- and an incident of a few thousand alerts cost its grouping a quadratic number of rows (measured:
-- docs/PERFORMANCE.md "Grouping into cases"). A join can only raise the aggregates, so it updates them
-- from the case's row and the joining alert alone; leaving a case (a removal, a move, a deleted
-- alert) can lower them and still recounts, as does a change of an alert's severity or malice inputs
-- (cases_alerts_inputs, unchanged). Same orders as cases_refresh_aggregates (kit/severity,
-- indicators.AlertMalice); the same values a recount gives, held by TestFinishEnrichment_Groups.
CREATE OR REPLACE FUNCTION cases_alerts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.case_uuid IS NOT NULL THEN
        PERFORM cases_refresh_aggregates(OLD.case_uuid);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.case_uuid IS NOT NULL THEN
        UPDATE cases AS k SET
            alert_count = k.alert_count + 1,
            alert_severity = (ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'])[greatest(
                coalesce(array_position(ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'], k.alert_severity), 0),
                array_position(ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'], NEW.severity))],
            malice = (ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'])[greatest(
                coalesce(array_position(ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'], k.malice), 1),
                coalesce(array_position(ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'], NEW.effective_malice), 1))]
        WHERE k.uuid = NEW.case_uuid;
    END IF;
    RETURN NULL;
END;
$$;
