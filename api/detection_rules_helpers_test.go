package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/store"
)

// newRulesServer is newTestServer with the detection-rule and context-document stores wired.
func newRulesServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServer(t, func(_ *Config, d *Deps) {
		st := testStore(t)
		d.DetectionRules, d.ContextDocuments = st, st
	})
}

// testAlertRow is a minimal alerts row, inserted directly so these tests do not depend on ingestion.
type testAlertRow struct {
	bun.BaseModel `bun:"table:alerts"`

	UUID                uuid.UUID  `bun:"uuid,pk,type:uuid"`
	Title               string     `bun:"title"`
	Severity            string     `bun:"severity"`
	Status              string     `bun:"status"`
	SourceName          string     `bun:"source_name"`
	OccurredAt          time.Time  `bun:"occurred_at"`
	IngestedAt          time.Time  `bun:"ingested_at"`
	CloseClassification *string    `bun:"close_classification"`
	AcknowledgedAt      *time.Time `bun:"acknowledged_at"`
	ClosedAt            *time.Time `bun:"closed_at"`
	Tags                []string   `bun:"tags,array"`
	DetectionRuleID     *int64     `bun:"detection_rule_id"`
}

// insertAlert fills defaults (Open, Medium, now) and inserts a.
func insertAlert(t *testing.T, st *store.Store, a testAlertRow) testAlertRow {
	t.Helper()
	if a.UUID == uuid.Nil {
		a.UUID = uuid.New()
	}
	if a.Title == "" {
		a.Title = "test alert"
	}
	if a.Severity == "" {
		a.Severity = "Medium"
	}
	if a.Status == "" {
		a.Status = "Open"
	}
	if a.SourceName == "" {
		a.SourceName = "generic"
	}
	if a.OccurredAt.IsZero() {
		a.OccurredAt = time.Now().UTC()
	}
	if a.IngestedAt.IsZero() {
		a.IngestedAt = a.OccurredAt
	}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	_, err := st.DB().NewInsert().Model(&a).Exec(context.Background())
	require.NoError(t, err)
	return a
}

// linkIndicator upserts the indicator (store.UpsertIndicators, as the pipeline does) and links it to
// the alert.
func linkIndicator(t *testing.T, st *store.Store, alert uuid.UUID, typ, value string) store.Indicator {
	t.Helper()
	ctx := context.Background()
	rows, err := st.UpsertIndicators(ctx, nil, []store.IndicatorKey{{Type: typ, Value: value}})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	_, err = st.DB().ExecContext(ctx, `INSERT INTO alert_indicators (alert_uuid, indicator_uuid) VALUES (?, ?) ON CONFLICT DO NOTHING`,
		alert, rows[0].UUID)
	require.NoError(t, err)
	return rows[0]
}

// createRule POSTs a rule and returns its data object.
func createRule(t *testing.T, ts *testServer, key string, body map[string]any) map[string]any {
	t.Helper()
	r := ts.do(t, http.MethodPost, "/v1/detection-rules", key, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}

// ruleID returns the internal id of the rule with uuid id.
func ruleID(t *testing.T, st *store.Store, id string) int64 {
	t.Helper()
	r, err := st.GetDetectionRule(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	return r.ID
}

// dataList returns the data array of a list response.
func dataList(t *testing.T, r response) []map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var out []map[string]any
	for _, x := range r.JSON(t)["data"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func field(items []map[string]any, name string) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it[name]
	}
	return out
}

// uniqueLocs is locs without repeats: the binder may report a wrong-typed list element twice (its
// type, then a length check on its zero value); these tests assert where the problems are.
func uniqueLocs(details []map[string]any) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range locs(details) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
