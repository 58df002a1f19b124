package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
)

// seedCases prepares the issue 30 measurement (case list and case page p99 at 10 000 cases and
// 100 000 alerts) on alerts seeded by seed: it creates n cases (statuses 60 % Open, 25 %
// Investigating, 15 % Closed with a classification; a third with a severity set by hand; 30 %
// assigned across 20 handles; 2 % titled "LockBit ...") and puts 60 % of the seeded alerts into them
// (about 6 per case, through alerts.case_uuid so the cases' maintained alert_count, severity and
// malice are set by the migration's triggers, as in production), then records case_created and
// alert_added_to_case activity for each, and ends with VACUUM ANALYZE. It runs once per database
// (it refuses when cases exist). It prints the uuid of the largest case (for the case page) and the
// counts.
func seedCases(ctx context.Context, enc *json.Encoder, dsn string, n int) error {
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(30*time.Minute)))
	sqldb.SetMaxOpenConns(1)
	db := bun.NewDB(sqldb, pgdialect.New())
	defer db.Close()
	started := time.Now()
	var have, alerts int
	if err := db.NewRaw(`SELECT count(*) FROM cases`).Scan(ctx, &have); err != nil {
		return fmt.Errorf("count cases: %w", err)
	}
	if have > 0 {
		return fmt.Errorf("seed-cases already ran on this database (%d cases)", have)
	}
	if err := db.NewRaw(`SELECT count(*) FROM alerts WHERE title LIKE 'seeded alert %'`).Scan(ctx, &alerts); err != nil {
		return err
	}
	if alerts == 0 {
		return fmt.Errorf("seed-cases needs alerts from `vigil-load seed` first")
	}
	steps := []struct {
		name string
		sql  string
		args []any
	}{
		{"cases", `INSERT INTO cases (title, description, severity, status, assignee, assigned_at, close_classification, tags,
				created_at, updated_at, closed_at)
			SELECT CASE WHEN g % 50 = 0 THEN 'LockBit intrusion ' ELSE 'Seeded case ' END || g || ' ' || md5(g::text),
				'Seeded case description ' || md5((g * 7)::text),
				CASE WHEN g % 3 = 0 THEN (ARRAY['Low','Medium','High','Critical'])[1 + g % 4] END,
				st, CASE WHEN g % 10 < 3 THEN 'analyst-' || (g % 20) END, CASE WHEN g % 10 < 3 THEN created END,
				CASE WHEN st = 'Closed' THEN (ARRAY['True Positive - Suspicious Activity', 'Duplicate', 'Undetermined'])[1 + g % 3] END,
				ARRAY['seed', 'campaign-' || (g % 25)], created, created + (g % 7200) * interval '1 second',
				CASE WHEN st = 'Closed' THEN created + (g % 86400 + 600) * interval '1 second' END
			FROM (SELECT g, now() - (g % ?::int) * interval '250 seconds' AS created,
				CASE WHEN g % 20 < 12 THEN 'Open' WHEN g % 20 < 17 THEN 'Investigating' ELSE 'Closed' END AS st
				FROM generate_series(1, ?::int) AS g) AS x`, []any{n, n}},
		{"alerts into cases", `UPDATE alerts AS a SET case_uuid = c.uuid
			FROM (SELECT uuid, row_number() OVER (ORDER BY uuid) AS n FROM alerts
				WHERE title LIKE 'seeded alert %' AND abs(hashtext(uuid::text)) % 10 < 6) AS s
			JOIN (SELECT uuid, row_number() OVER (ORDER BY case_number) - 1 AS k FROM cases) AS c ON c.k = s.n % ?::int
			WHERE a.uuid = s.uuid`, []any{n}},
		{"activity", `INSERT INTO activity_events (event_type, actor_type, alert_uuid, case_uuid, "references", created_at)
			SELECT 'case_created', 'api', NULL, c.uuid, jsonb_build_object('case_number', 'CASE-' || c.case_number, 'title', c.title), c.created_at
			FROM cases AS c
			UNION ALL
			SELECT 'alert_added_to_case', 'api', a.uuid, a.case_uuid, jsonb_build_object('case_uuid', a.case_uuid), a.created_at
			FROM alerts AS a WHERE a.case_uuid IS NOT NULL`, nil},
		{"vacuum", `VACUUM ANALYZE cases, alerts, activity_events`, nil},
	}
	report := map[string]any{}
	for _, s := range steps {
		t0 := time.Now()
		if _, err := db.NewRaw(s.sql, s.args...).Exec(ctx); err != nil {
			return fmt.Errorf("seed cases: %s: %w", s.name, err)
		}
		report[s.name+"_seconds"] = time.Since(t0).Seconds()
	}
	var sample struct {
		UUID       string `bun:"uuid"`
		AlertCount int    `bun:"alert_count"`
	}
	if err := db.NewRaw(`SELECT uuid::text, alert_count FROM cases ORDER BY alert_count DESC, case_number LIMIT 1`).Scan(ctx, &sample); err != nil {
		return err
	}
	var inCases, cases int
	if err := db.NewRaw(`SELECT count(*) FROM alerts WHERE case_uuid IS NOT NULL`).Scan(ctx, &inCases); err != nil {
		return err
	}
	if err := db.NewRaw(`SELECT count(*) FROM cases`).Scan(ctx, &cases); err != nil {
		return err
	}
	report["cases"], report["alerts"], report["alerts_in_cases"] = cases, alerts, inCases
	report["largest_case_uuid"], report["largest_case_alerts"] = sample.UUID, sample.AlertCount
	report["seconds"] = time.Since(started).Seconds()
	return enc.Encode(report)
}
