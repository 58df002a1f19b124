package temporal_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// TestPipeline_PathologicalPayloadsFinish posts issue 43's pathological payloads to the real ingest
// route: each is accepted (202), its pipeline finishes (Enriched) within the scan's bounds, and what
// a bound cut short is said on the alert (normalization_notes). Pass 4's own time and memory on them
// are measured by kit/indicators' BenchmarkPass4Pathological (docs/PERFORMANCE.md).
func TestPipeline_PathologicalPayloadsFinish(t *testing.T) {
	e := pipelineHarness(t)
	tag := uuid.NewString()[:8]
	many := make([]string, 50_000)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("s%05d-%s", i, strings.Repeat("x", 10)))
	}
	ips := make([]string, 10_000)
	for i := range ips {
		ips[i] = fmt.Sprintf("45.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
	}
	cases := map[string]string{
		"50 000 strings": `{"title":"many strings ` + tag + `","strings":[` + strings.Join(many, ",") + `]}`,
		"5 000-deep":     `{"title":"deep ` + tag + `","deep":` + strings.Repeat("[", 5000) + `"45.33.32.156"` + strings.Repeat("]", 5000) + `}`,
		"10 000 IPs":     `{"title":"ips ` + tag + `","notes":"` + strings.Join(ips, " ") + `"}`,
		"invalid UTF-8":  "{\"title\":\"utf8 " + tag + "\",\"msg\":\"bad \xff\xfe byte near 45.33.32.157\"}",
		"1 M dots":       `{"title":"dots ` + tag + `","dots":"` + strings.Repeat(".", 1_000_000) + `"}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			status, m := e.do(t, http.MethodPost, "/v1/ingest/generic", body)
			require.Equal(t, http.StatusAccepted, status, "%v", m)
			id := uuid.MustParse(m["data"].(map[string]any)["alert_uuid"].(string))
			a := e.waitEnriched(t, id, 120*time.Second)
			require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
			links := e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id)
			notes := e.count(t, `SELECT coalesce(jsonb_array_length(normalized->'normalization_notes'), 0) FROM alerts WHERE uuid = ?`, id)
			t.Logf("%s: %d bytes, Enriched in %s, %d indicators linked, %d notes", name, len(body), time.Since(start).Round(time.Millisecond), links, notes)
			require.LessOrEqual(t, links, pipeMaxIndicators)
			if name == "10 000 IPs" {
				require.Equal(t, pipeMaxIndicators, links, "the cap")
				require.Equal(t, 1, e.count(t, `SELECT count(*) FROM alerts, jsonb_array_elements(normalized->'normalization_notes') AS n
					WHERE uuid = ? AND n->>'field' = 'indicators'`, id), "the cap is noted")
			}
		})
	}
}
