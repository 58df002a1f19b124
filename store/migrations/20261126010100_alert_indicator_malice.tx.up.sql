-- The list's malice filter (issue 29, API.md §13) at 100 000 alerts and 1 000 000 links: computing
-- "the worst malice of the linked indicators" per alert at query time took seconds (a hashed set of
-- every link of a level, then every alert). indicator_malice keeps it on the alert: the worst of
-- Benign < Suspicious < Malicious over its linked indicators, NULL when none is above Pending. The
-- store keeps it current in the transactions that change it (links added, an indicator's malice
-- recorded by enrichment or set by an analyst: store.refreshIndicatorMalice); the effective malice
-- is coalesce(malice_override, indicator_malice, 'Pending'), held to indicators.AlertMalice by
-- TestMaliceFilterAgreesWithAlertMalice.
ALTER TABLE alerts ADD COLUMN indicator_malice text;

--bun:split

UPDATE alerts AS a SET indicator_malice = w.worst
FROM (
    SELECT ai.alert_uuid,
        (ARRAY['Benign', 'Suspicious', 'Malicious'])[max(array_position(ARRAY['Benign', 'Suspicious', 'Malicious'], i.malice))] AS worst
    FROM alert_indicators AS ai JOIN indicators AS i ON i.uuid = ai.indicator_uuid
    WHERE i.malice IN ('Benign', 'Suspicious', 'Malicious')
    GROUP BY ai.alert_uuid
) AS w
WHERE a.uuid = w.alert_uuid;

--bun:split

CREATE INDEX alerts_effective_malice_idx ON alerts ((coalesce(malice_override, indicator_malice, 'Pending')), occurred_at DESC, uuid DESC);
