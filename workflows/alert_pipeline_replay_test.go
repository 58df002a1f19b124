package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/vigil-soc/vigil/workflows"
)

// TestAlertPipeline_Replay replays histories recorded from real runs against the current code: a
// change that breaks running pipelines fails here. Version 0 (ingest → extraction → search attributes
// → link → stub rule → one provider call → finish) and version 1 (attributes set at start; link and
// stub rule in one step; provider calls for four indicators, recorded with
// `go test ./temporal -run TestPipeline_IngestToEnriched -record-pipeline-history=...`).
func TestAlertPipeline_Replay(t *testing.T) {
	for _, name := range []string{"alert_pipeline_history.json", "alert_pipeline_v1_history.json"} {
		t.Run(name, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.AlertPipeline)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+name))
		})
	}
}
