-- The grouping's lookup takes the rules it applies as arguments (issue 45): the verdicts that group,
-- worst first, and the case statuses that count as open are domain/cases' (cases.GroupingMalices,
-- cases.OpenStatuses), named there once; this function only searches. Otherwise as migration
-- 20261127020200: for alert p_alert, among the distinct cases linking each of its indicators whose
-- verdict is in p_malices (the links' case copy, alert_indicators_case_idx: a loose index scan, one
-- probe per case), the oldest case whose status is in p_open (created_at, then case_number) one of
-- whose alerts sharing the indicator was seen (occurred_at or last_seen_at) at or after p_since, with
-- the worst such indicator (its place in p_malices, then type and value); its row locked FOR UPDATE
-- (the lock the join takes next). No row when none matches.
DROP FUNCTION case_grouping_match(uuid, timestamptz);

--bun:split

CREATE FUNCTION case_grouping_match(p_alert uuid, p_since timestamptz, p_malices text[], p_open text[])
RETURNS TABLE (m_case uuid, m_indicator uuid, m_type text, m_value text, m_malice text)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE hot AS (
        SELECT i.uuid, i.type, i.value, i.malice FROM alert_indicators AS mine JOIN indicators AS i ON i.uuid = mine.indicator_uuid
        WHERE mine.alert_uuid = p_alert AND i.malice = ANY (p_malices)
    ), pairs AS (
        SELECT h.uuid AS ind, (SELECT l.case_uuid FROM alert_indicators AS l
            WHERE l.indicator_uuid = h.uuid AND l.case_uuid IS NOT NULL ORDER BY l.case_uuid LIMIT 1) AS kase
        FROM hot AS h
        UNION ALL
        SELECT p.ind, (SELECT l.case_uuid FROM alert_indicators AS l
            WHERE l.indicator_uuid = p.ind AND l.case_uuid > p.kase ORDER BY l.case_uuid LIMIT 1)
        FROM pairs AS p WHERE p.kase IS NOT NULL
    )
    SELECT c.uuid, h.uuid, h.type, h.value, h.malice
    FROM pairs AS p
    JOIN hot AS h ON h.uuid = p.ind
    JOIN cases AS c ON c.uuid = p.kase
    WHERE p.kase IS NOT NULL AND c.status = ANY (p_open) AND EXISTS (
        SELECT 1 FROM alert_indicators AS other JOIN alerts AS o ON o.uuid = other.alert_uuid
        WHERE other.indicator_uuid = p.ind AND other.case_uuid IS NOT NULL AND other.case_uuid = p.kase
            AND other.alert_uuid <> p_alert
            AND o.case_uuid = p.kase AND greatest(o.occurred_at, o.last_seen_at) >= p_since)
    ORDER BY c.created_at, c.case_number, array_position(p_malices, h.malice), h.type, h.value
    LIMIT 1
    FOR UPDATE OF c;
END;
$$;
