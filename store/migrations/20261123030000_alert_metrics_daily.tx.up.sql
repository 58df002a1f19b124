-- Metrics (docs/API.md "Metrics"). Three small SQL functions are the one definition of an alert's
-- activity, its close outcome and an elapsed time: the metric queries (store/metrics.go) and the
-- daily roll-up below both call them. The planner inlines them (plain column arguments).
CREATE FUNCTION alert_is_active(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT status <> 'Closed' $$;

--bun:split

-- 'false_positive' / 'true_positive' when the classification of a Closed alert starts with
-- "False Positive" / "True Positive", 'other' for any other Closed alert, NULL while not Closed.
CREATE FUNCTION alert_outcome(status text, close_classification text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN status = 'Closed' THEN
        CASE WHEN close_classification LIKE 'False Positive%' THEN 'false_positive'
             WHEN close_classification LIKE 'True Positive%' THEN 'true_positive'
             ELSE 'other' END
    END
    $$;

--bun:split

-- Seconds from from_at to to_at, negative differences (clock skew) as 0; NULL when either is NULL.
CREATE FUNCTION elapsed_seconds(from_at timestamptz, to_at timestamptz) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN from_at IS NOT NULL AND to_at IS NOT NULL THEN greatest(0, extract(epoch FROM to_at - from_at))::double precision END $$;

--bun:split

-- Per UTC day of created_at and severity, the additive figures of GET /v1/metrics/summary, kept
-- exact by triggers on alerts, so the summary reads ~30 × 6 × 8 rows instead of every alert. shard
-- (a hash of the alert uuid) spreads concurrent ingests of one day and severity over 8 rows, so
-- they do not queue on one row lock.
CREATE TABLE alert_metrics_daily (
    day                 date     NOT NULL,
    severity            text     NOT NULL,
    shard               smallint NOT NULL,
    alerts              bigint   NOT NULL DEFAULT 0,
    active              bigint   NOT NULL DEFAULT 0,
    closed              bigint   NOT NULL DEFAULT 0,
    false_positive      bigint   NOT NULL DEFAULT 0,
    true_positive       bigint   NOT NULL DEFAULT 0,
    acknowledged        bigint   NOT NULL DEFAULT 0, -- alerts with an acknowledge time
    acknowledge_seconds numeric  NOT NULL DEFAULT 0, -- their sum
    close_timed         bigint   NOT NULL DEFAULT 0, -- Closed alerts with a close time
    close_seconds       numeric  NOT NULL DEFAULT 0, -- their sum
    PRIMARY KEY (day, severity, shard)
);

--bun:split

-- Adds (sign 1) or removes (sign -1) one alert's contribution. The acknowledge and close times are
-- the ones store/metrics.go's alertTimings names (TestMetricsSummary holds the two equal).
CREATE FUNCTION alert_metrics_daily_add(r alerts, sign integer) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO alert_metrics_daily AS m (day, severity, shard, alerts, active, closed, false_positive, true_positive,
                                          acknowledged, acknowledge_seconds, close_timed, close_seconds)
    SELECT (r.created_at AT TIME ZONE 'UTC')::date, r.severity, (abs(hashtext(r.uuid::text)) % 8)::smallint,
           sign,
           CASE WHEN alert_is_active(r.status) THEN sign ELSE 0 END,
           CASE WHEN x.outcome IS NOT NULL THEN sign ELSE 0 END,
           CASE WHEN x.outcome = 'false_positive' THEN sign ELSE 0 END,
           CASE WHEN x.outcome = 'true_positive' THEN sign ELSE 0 END,
           CASE WHEN x.ack IS NOT NULL THEN sign ELSE 0 END,
           coalesce(sign * x.ack::numeric, 0),
           CASE WHEN x.close IS NOT NULL THEN sign ELSE 0 END,
           coalesce(sign * x.close::numeric, 0)
    FROM (SELECT alert_outcome(r.status, r.close_classification) AS outcome,
                 elapsed_seconds(r.ingested_at, r.acknowledged_at) AS ack,
                 CASE WHEN r.status = 'Closed' THEN elapsed_seconds(r.ingested_at, r.closed_at) END AS close) AS x
    ON CONFLICT (day, severity, shard) DO UPDATE SET
        alerts = m.alerts + EXCLUDED.alerts,
        active = m.active + EXCLUDED.active,
        closed = m.closed + EXCLUDED.closed,
        false_positive = m.false_positive + EXCLUDED.false_positive,
        true_positive = m.true_positive + EXCLUDED.true_positive,
        acknowledged = m.acknowledged + EXCLUDED.acknowledged,
        acknowledge_seconds = m.acknowledge_seconds + EXCLUDED.acknowledge_seconds,
        close_timed = m.close_timed + EXCLUDED.close_timed,
        close_seconds = m.close_seconds + EXCLUDED.close_seconds
    $$;

--bun:split

CREATE FUNCTION alert_metrics_daily_trigger() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM alert_metrics_daily;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM alert_metrics_daily_add(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM alert_metrics_daily_add(NEW, 1);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE TRIGGER alerts_metrics_daily_insert_delete AFTER INSERT OR DELETE ON alerts
    FOR EACH ROW EXECUTE FUNCTION alert_metrics_daily_trigger();

--bun:split

-- Only updates that change a rolled-up input (not enrichment, dedup counts, tags, …).
CREATE TRIGGER alerts_metrics_daily_update AFTER UPDATE ON alerts
    FOR EACH ROW
    WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.severity IS DISTINCT FROM NEW.severity
          OR OLD.status IS DISTINCT FROM NEW.status OR OLD.close_classification IS DISTINCT FROM NEW.close_classification
          OR OLD.ingested_at IS DISTINCT FROM NEW.ingested_at OR OLD.acknowledged_at IS DISTINCT FROM NEW.acknowledged_at
          OR OLD.closed_at IS DISTINCT FROM NEW.closed_at)
    EXECUTE FUNCTION alert_metrics_daily_trigger();

--bun:split

CREATE TRIGGER alerts_metrics_daily_truncate AFTER TRUNCATE ON alerts
    FOR EACH STATEMENT EXECUTE FUNCTION alert_metrics_daily_trigger();

--bun:split

-- The alerts already stored, in one pass (alert_metrics_daily_add's sums, grouped).
INSERT INTO alert_metrics_daily (day, severity, shard, alerts, active, closed, false_positive, true_positive,
                                 acknowledged, acknowledge_seconds, close_timed, close_seconds)
SELECT day, severity, shard, count(*), count(*) FILTER (WHERE alert_is_active(status)), count(outcome),
       count(*) FILTER (WHERE outcome = 'false_positive'), count(*) FILTER (WHERE outcome = 'true_positive'),
       count(ack), coalesce(sum(ack::numeric), 0), count(close), coalesce(sum(close::numeric), 0)
FROM (SELECT (created_at AT TIME ZONE 'UTC')::date AS day, severity, (abs(hashtext(uuid::text)) % 8)::smallint AS shard, status,
             alert_outcome(status, close_classification) AS outcome,
             elapsed_seconds(ingested_at, acknowledged_at) AS ack,
             CASE WHEN status = 'Closed' THEN elapsed_seconds(ingested_at, closed_at) END AS close
      FROM alerts) AS x
GROUP BY day, severity, shard;
