-- Indexes for the alert list's remaining filter and sorts (measured with 100 000+ alerts, see
-- docs/PERFORMANCE.md): title substring search (q) through trigrams, and the title, status and
-- severity sorts (status and severity sort by rank, the exact expressions ListAlerts orders by).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

--bun:split

CREATE INDEX alerts_title_trgm_idx ON alerts USING gin (lower(title) gin_trgm_ops);

--bun:split

CREATE INDEX alerts_title_sort_idx ON alerts (lower(title), uuid);

--bun:split

CREATE INDEX alerts_status_rank_idx ON alerts (array_position(ARRAY['Open','Triaging','Escalated','Closed'], status), uuid);

--bun:split

CREATE INDEX alerts_severity_rank_idx ON alerts (array_position(ARRAY['Pending','Informational','Low','Medium','High','Critical'], severity), uuid);

--bun:split

CREATE INDEX alerts_source_sort_idx ON alerts (source_name, uuid);
