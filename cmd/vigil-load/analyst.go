package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
)

// seedAnalyst prepares the issue 29 list filters' measurement on alerts seeded by seed: it gives
// every seeded alert a description, assigns 30 % of them across 20 handles, and links them to
// indicators until there are `links` links in all (10 per alert for 100 000 alerts and 1 000 000
// links), over 200 000 indicators of three types (ip, domain, hash_sha256) whose malice is 90 %
// Pending/Benign, 8 % Suspicious, 2 % Malicious. It runs once per database (it refuses when indicators
// with malice_source "enrichment" exist) and ends with VACUUM ANALYZE.
func seedAnalyst(ctx context.Context, enc *json.Encoder, dsn string, links int) error {
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(30*time.Minute)))
	sqldb.SetMaxOpenConns(1)
	db := bun.NewDB(sqldb, pgdialect.New())
	defer db.Close()
	started := time.Now()
	var have int
	if err := db.NewRaw(`SELECT count(*) FROM indicators WHERE malice_source = 'enrichment'`).Scan(ctx, &have); err != nil {
		return fmt.Errorf("count analyst indicators: %w", err)
	}
	if have > 0 {
		return fmt.Errorf("seed-analyst already ran on this database (%d of its indicators)", have)
	}
	steps := []struct{ name, sql string }{
		{"descriptions and assignees", `UPDATE alerts SET
			description = 'Seeded description ' || md5(uuid::text) || CASE WHEN hashtext(uuid::text) % 50 = 0 THEN ' LockBit ransomware note' ELSE '' END,
			assignee = CASE WHEN abs(hashtext(uuid::text)) % 10 < 3 THEN 'analyst-' || (abs(hashtext(uuid::text)) % 20) END,
			assigned_at = CASE WHEN abs(hashtext(uuid::text)) % 10 < 3 THEN created_at END
			WHERE title LIKE 'seeded alert %'`},
		{"indicators", `INSERT INTO indicators (type, value, is_enriched, malice, malice_source)
			SELECT t.type, t.value, true, m.malice, 'enrichment'
			FROM generate_series(0, 199999) AS g
			CROSS JOIN LATERAL (SELECT CASE g % 3 WHEN 0 THEN 'ip' WHEN 1 THEN 'domain' ELSE 'hash_sha256' END AS type,
				CASE g % 3 WHEN 0 THEN '10.' || (g / 65536) || '.' || ((g / 256) % 256) || '.' || (g % 256)
					WHEN 1 THEN 'a29-' || g || '.example.com' ELSE encode(sha256(('a29-' || g)::bytea), 'hex') END AS value) AS t
			CROSS JOIN LATERAL (SELECT CASE WHEN g % 50 = 7 THEN 'Malicious' WHEN g % 100 < 8 THEN 'Suspicious'
				WHEN g % 2 = 0 THEN 'Benign' ELSE 'Pending' END AS malice) AS m
			ON CONFLICT DO NOTHING`},
		// Without fresh statistics the planner takes the 200 000 new indicators for one row and
		// joins the links below by a nested loop that does not finish (seen on a fresh database).
		{"analyze", `ANALYZE alerts, indicators`},
		{"links", `INSERT INTO alert_indicators (alert_uuid, indicator_uuid, source)
			SELECT a.uuid, i.uuid, 'seed'
			FROM (SELECT uuid, row_number() OVER (ORDER BY uuid) AS n FROM alerts WHERE title LIKE 'seeded alert %') AS a
			CROSS JOIN generate_series(0, ?::int - 1) AS k
			JOIN (SELECT uuid, row_number() OVER (ORDER BY value) - 1 AS r FROM indicators
				WHERE malice_source = 'enrichment') AS i
			  ON i.r = (a.n * 7919 + k * 104729) % 200000
			ON CONFLICT DO NOTHING`},
		// The links above bypass the store, so the alerts' worst linked malice (what the malice
		// filter reads) is set here the way migration 20261126010100 sets it.
		{"indicator malice", `UPDATE alerts AS a SET indicator_malice = w.worst
			FROM (SELECT ai.alert_uuid,
					(ARRAY['Benign', 'Suspicious', 'Malicious'])[max(array_position(ARRAY['Benign', 'Suspicious', 'Malicious'], i.malice))] AS worst
				FROM alert_indicators AS ai JOIN indicators AS i ON i.uuid = ai.indicator_uuid
				WHERE i.malice IN ('Benign', 'Suspicious', 'Malicious')
				GROUP BY ai.alert_uuid) AS w
			WHERE a.uuid = w.alert_uuid AND a.indicator_malice IS DISTINCT FROM w.worst`},
	}
	var alerts int
	if err := db.NewRaw(`SELECT count(*) FROM alerts WHERE title LIKE 'seeded alert %'`).Scan(ctx, &alerts); err != nil {
		return err
	}
	if alerts == 0 {
		return fmt.Errorf("seed-analyst needs alerts from `vigil-load seed` first")
	}
	perAlert := (links + alerts - 1) / alerts
	report := map[string]any{}
	for _, s := range steps {
		t0 := time.Now()
		var err error
		if s.name == "links" {
			_, err = db.ExecContext(ctx, s.sql, perAlert)
		} else {
			_, err = db.ExecContext(ctx, s.sql)
		}
		if err != nil {
			return fmt.Errorf("seed %s: %w", s.name, err)
		}
		report[s.name+"_seconds"] = time.Since(t0).Seconds()
	}
	for _, table := range []string{"alerts", "alert_indicators", "indicators"} {
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+table); err != nil {
			return fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	var total, inds int
	if err := db.NewRaw("SELECT count(*) FROM alert_indicators").Scan(ctx, &total); err != nil {
		return err
	}
	if err := db.NewRaw("SELECT count(*) FROM indicators").Scan(ctx, &inds); err != nil {
		return err
	}
	var sample struct {
		Malicious, Shared, IP string
	}
	// Values the measurement filters on: a Malicious hash, a domain shared by many alerts, an IP.
	_ = db.NewRaw(`SELECT (SELECT value FROM indicators WHERE type = 'hash_sha256' AND malice = 'Malicious' AND value <> '' LIMIT 1),
		(SELECT i.value FROM indicators i JOIN alert_indicators ai ON ai.indicator_uuid = i.uuid WHERE i.type = 'domain'
			GROUP BY i.value ORDER BY count(*) DESC LIMIT 1),
		(SELECT value FROM indicators WHERE type = 'ip' AND malice_source = 'enrichment' LIMIT 1)`).Scan(ctx, &sample.Malicious, &sample.Shared, &sample.IP)
	report["alerts"], report["links_total"], report["indicators_total"] = alerts, total, inds
	report["sample_values"] = sample
	report["seconds"] = time.Since(started).Seconds()
	return enc.Encode(report)
}

// bulkBench times POST /v1/alerts/bulk over `rounds` batches of 500 alerts (the newest Open or
// Triaging ones), each batch assigning them to a handle and adding a tag, then un-doing it (a
// second request, also timed): per-request latency and how many alerts succeeded.
func bulkBench(ctx context.Context, enc *json.Encoder, url, key, dsn string, rounds int) error {
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	db := bun.NewDB(sqldb, pgdialect.New())
	defer db.Close()
	var lat []time.Duration
	var okTotal, failTotal int
	for r := range rounds {
		var ids []string
		if err := db.NewRaw(`SELECT uuid::text FROM alerts WHERE status IN ('Open', 'Triaging')
			ORDER BY occurred_at DESC OFFSET ? LIMIT 500`, r*500).Scan(ctx, &ids); err != nil {
			return fmt.Errorf("pick alerts: %w", err)
		}
		for _, patch := range []map[string]any{
			{"assignee": fmt.Sprintf("bench-%d", r), "tags_add": []string{"bulk-bench"}},
			{"assignee": "", "tags_remove": []string{"bulk-bench"}},
		} {
			body, _ := json.Marshal(map[string]any{"alert_uuids": ids, "patch": patch})
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/alerts/bulk", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("bulk: %w", err)
			}
			var out struct {
				Data struct {
					Succeeded, Failed int
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("bulk: status %d: %v", resp.StatusCode, err)
			}
			okTotal += out.Data.Succeeded
			failTotal += out.Data.Failed
		}
	}
	p50, p90, p99, maxMS := summarize(lat)
	return enc.Encode(map[string]any{"requests": len(lat), "alerts_per_request": 500, "p50_ms": p50, "p90_ms": p90, "p99_ms": p99,
		"max_ms": maxMS, "succeeded": okTotal, "failed": failTotal})
}
