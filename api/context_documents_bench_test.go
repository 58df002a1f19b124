package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

// benchGet times sequential authenticated GETs of url and reports percentiles.
func benchGet(b *testing.B, key, url string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	get := func() time.Duration {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	for range 50 {
		get()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		lat = append(lat, get())
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkAlertContext measures GET /v1/alerts/{uuid}/context with 100 or 1 000 targeted documents
// (rules on severity, source, tags, title and rule fields; one in 20 matches the alert) and 20 global
// ones, 4 KiB of content each: rules are read narrowly and evaluated in Go, the documents that apply
// loaded whole.
func BenchmarkAlertContext(b *testing.B) {
	for _, targeted := range []int{100, 1000} {
		b.Run(fmt.Sprintf("targeted-%d", targeted), func(b *testing.B) { benchAlertContext(b, targeted) })
	}
}

func benchAlertContext(b *testing.B, targeted int) {
	ts := newTestServer(b, func(_ *Config, d *Deps) {
		st := testStore(b)
		d.DetectionRules, d.ContextDocuments = st, st
	})
	ctx := context.Background()
	_, err := ts.Store.DB().ExecContext(ctx, "DELETE FROM context_documents")
	require.NoError(b, err)
	content := strings.Repeat("Runbook step. ", 4096/14)
	for i := range 20 + targeted {
		d := store.ContextDocument{Title: fmt.Sprintf("doc %04d", i), DocumentType: "runbook", Content: content}
		switch {
		case i < 20:
			d.IsGlobal = true
		case i%20 == 0: // 50 documents target this alert's tag
			d.TargetingRules = &targeting.Rules{MatchAll: []targeting.Rule{{Field: "severity", Op: "gte", Value: "Medium"}},
				MatchAny: []targeting.Rule{{Field: "tags", Op: "contains", Value: "bench"}}}
		default:
			d.TargetingRules = &targeting.Rules{MatchAny: []targeting.Rule{
				{Field: "source_name", Op: "eq", Value: fmt.Sprintf("source-%d", i)},
				{Field: "title", Op: "contains", Value: fmt.Sprintf("needle %d", i)},
				{Field: "detection_rule.name", Op: "in", Value: []string{"a", "b", fmt.Sprintf("rule %d", i)}}}}
		}
		require.NoError(b, ts.Store.CreateContextDocument(ctx, &d))
	}
	rule := store.DetectionRule{Name: "bench rule", IsActive: true, MitreTactics: []string{"TA0001"}}
	_, err = ts.Store.CreateDetectionRule(ctx, &rule)
	require.NoError(b, err)
	alert := uuid.New()
	_, err = ts.Store.DB().ExecContext(ctx, `INSERT INTO alerts (uuid, title, severity, source_name, occurred_at, tags, detection_rule_id)
		VALUES (?, 'bench alert', 'High', 'generic', now(), '{bench}', ?)`, alert, rule.ID)
	require.NoError(b, err)
	key := mustKey(b, ts.Store, auth.ScopeAlertsRead)
	url := ts.URL + "/v1/alerts/" + alert.String() + "/context"
	subj, err := ts.Store.AlertSubject(ctx, alert)
	require.NoError(b, err)
	docs, err := ts.Store.ApplicableContextDocuments(ctx, subj)
	require.NoError(b, err)
	require.Len(b, docs, 20+targeted/20)
	benchGet(b, key, url)
}
