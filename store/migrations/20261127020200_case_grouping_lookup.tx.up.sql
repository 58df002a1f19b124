-- The grouping's lookup (store/grouping.go, docs/INGEST.md "Grouping into cases") as a function: a
-- PL/pgSQL function keeps its statement's plan for the session, where the same statement sent by the
-- finish was planned again on every grouped alert (its recursive CTE took 1.6-2 ms to plan against
-- 0.3 ms to run, on the shared machine). For alert p_alert: among the distinct cases linking each of
-- its Malicious or Suspicious indicators (the links' case copy, alert_indicators_case_idx: a loose
-- index scan, one probe per case), the oldest open case (Open or Investigating: store.CaseOpen,
-- store.CaseInvestigating) one of whose alerts sharing the indicator was seen (occurred_at or
-- last_seen_at) at or after p_since, with the worst such indicator (Malicious first, then type and
-- value); its row locked FOR UPDATE (the lock the join takes next). No row when none matches.
CREATE FUNCTION case_grouping_match(p_alert uuid, p_since timestamptz)
RETURNS TABLE (m_case uuid, m_indicator uuid, m_type text, m_value text, m_malice text)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE hot AS (
        SELECT i.uuid, i.type, i.value, i.malice FROM alert_indicators AS mine JOIN indicators AS i ON i.uuid = mine.indicator_uuid
        WHERE mine.alert_uuid = p_alert AND i.malice IN ('Malicious', 'Suspicious')
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
    WHERE p.kase IS NOT NULL AND c.status IN ('Open', 'Investigating') AND EXISTS (
        SELECT 1 FROM alert_indicators AS other JOIN alerts AS o ON o.uuid = other.alert_uuid
        WHERE other.indicator_uuid = p.ind AND other.case_uuid IS NOT NULL AND other.case_uuid = p.kase
            AND other.alert_uuid <> p_alert
            AND o.case_uuid = p.kase AND greatest(o.occurred_at, o.last_seen_at) >= p_since)
    ORDER BY c.created_at, c.case_number, h.malice = 'Malicious' DESC, h.type, h.value
    LIMIT 1
    FOR UPDATE OF c;
END;
$$;
