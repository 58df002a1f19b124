package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/vigil-soc/vigil/workflows"
)

// TestAlertPipeline_Replay replays histories recorded from real runs against the current code: a
// change that breaks running pipelines fails here. Version 0 (ingest → extraction → search attributes
// → link → stub rule → one provider call → finish), version 1 (attributes set at start; link and
// stub rule in one step; provider calls for four indicators as activities) and version 2 (as 1, the
// provider steps as local activities: the whole run in one workflow task), the last two recorded with
// `go test ./temporal -run TestPipeline_IngestToEnriched -record-pipeline-history=...`; and version 2
// with two steps falling back to activities (a failed and an overrun local attempt), recorded with
// `go test ./temporal -run TestPipeline_LocalStepFallsBackToActivity -record-fallback-history=...`;
// version 3 (extraction, link and plan in one local activity, PipelinePrepare; recorded like
// version 2); and version 4 (version 3's steps, the finish grouping the alert into an open case; a
// run that grouped, recorded with `go test ./temporal -run TestPipeline_GroupsIntoOpenCase
// -record-grouping-history=...`); and version 5 (version 4's steps; every provider call failing no
// longer makes the alert Failed; recorded like version 4).
func TestAlertPipeline_Replay(t *testing.T) {
	for _, name := range []string{"alert_pipeline_history.json", "alert_pipeline_v1_history.json", "alert_pipeline_v2_history.json",
		"alert_pipeline_v2_fallback_history.json", "alert_pipeline_v3_history.json", "alert_pipeline_v4_history.json",
		"alert_pipeline_v5_history.json"} {
		t.Run(name, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.AlertPipeline)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+name))
		})
	}
}
