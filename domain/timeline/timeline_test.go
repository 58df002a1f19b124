package timeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

func row(kind, name string, detail map[string]any) store.TimelineRow {
	raw, _ := json.Marshal(detail)
	r := store.TimelineRow{Kind: kind, Detail: raw}
	if name != "" {
		r.ActorName = &name
	}
	return r
}

func TestSummaries(t *testing.T) {
	for _, tc := range []struct {
		row  store.TimelineRow
		want string
	}{
		{row(store.TimelineComment, "maria", map[string]any{"body": "Isolated.\n\n<script>x</script>"}), "Isolated. <script>x</script>"},
		{row(store.TimelineComment, "maria", map[string]any{"body": "v2", "edited_at": "2026-11-26T03:00:00Z"}), "(edited) v2"},
		{row(store.TimelineFinding, "bot", map[string]any{"summary": "C2.", "confidence": "high"}), "[high confidence] C2."},
		{row(store.TimelineEnrichment, "abuseipdb", map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.7",
			"status": "success", "malice": "Malicious"}), "ip 203.0.113.7: success, Malicious"},
		{row(store.TimelineEnrichment, "vt", map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.7",
			"status": "error", "error_message": "quota"}), "ip 203.0.113.7: error (quota)"},
		{row(store.TimelineRun, "Isolate host", map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.7",
			"status": "succeeded"}), "Isolate host on ip 203.0.113.7: succeeded"},
		{row(store.TimelineDecision, "alice", map[string]any{"decision": "approved", "workflow_name": "Isolate host", "comment": "go"}),
			"approved Isolate host: go"},
		{row(store.TimelineActivity, "", map[string]any{"event_type": "alert_status_updated", "references": map[string]any{"from": "Open", "to": "Closed",
			"close_classification": "Duplicate"}}), "alert_status_updated: Open → Closed, close_classification Duplicate"},
		{row(store.TimelineActivity, "", map[string]any{"event_type": "comment_deleted", "references": map[string]any{"body": "secret words"}}), "comment_deleted"},
		{store.TimelineRow{Kind: store.TimelineActivity, Detail: json.RawMessage(`not json`)}, ""},
	} {
		require.Equal(t, tc.want, summarize(tc.row))
	}
	long := summarize(row(store.TimelineComment, "", map[string]any{"body": strings.Repeat("ж", 500)}))
	require.Len(t, []rune(long), MaxSummary)
	require.True(t, strings.HasSuffix(long, "…"))
}
