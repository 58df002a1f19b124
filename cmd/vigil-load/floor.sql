-- pgbench floor for docs/PERFORMANCE.md: one alert-like row plus one outbox row per transaction, one
-- statement, durable commit. Create the tables once with
--   CREATE TABLE floor_alerts (LIKE alerts INCLUDING ALL); CREATE TABLE floor_outbox (LIKE alert_outbox INCLUDING ALL);
-- then: pgbench -n -R 50 -T 30 -c 16 -j 2 -f floor.sql --log --log-prefix=pgb postgres
--       vigil-load pgbench-log -prefix-log pgb
\set n random(1, 1000000000)
WITH a AS (
  INSERT INTO floor_alerts (title, severity, source_name, occurred_at, fingerprint, tags, description, raw_payload, normalized)
  VALUES ('pgbench floor ' || :n, 'High', 'generic', now(), md5(:n::text || clock_timestamp()::text), ARRAY['load','floor'], 'synthetic load alert',
    '{"title":"load floor","severity":"High","tags":["load","floor"],"description":"synthetic load alert","rule_id":"load-rule","indicators":[{"type":"ip","value":"45.1.2.3"},{"type":"ip","value":"45.1.2.4"}]}'::jsonb,
    '{"fields":{},"indicators":[{"type":"ip","value":"45.1.2.3"},{"type":"ip","value":"45.1.2.4"}]}'::jsonb)
  RETURNING uuid
)
INSERT INTO floor_outbox (alert_uuid, kind) SELECT uuid, 'pipeline' FROM a;
