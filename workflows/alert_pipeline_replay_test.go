package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/vigil-soc/vigil/workflows"
)

// TestAlertPipeline_Replay replays a history recorded from a real run (ingest → extraction → link →
// stub rule → one provider call → finish) against the current code: a change that breaks running
// pipelines fails here.
func TestAlertPipeline_Replay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.AlertPipeline)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/alert_pipeline_history.json"))
}
