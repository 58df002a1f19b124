package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/vigil-soc/vigil/workflows"
)

// TestRetentionPass_Replay replays a RetentionPass recorded against the real dev server
// (TestRetentionPass_WorkerStoppedMidPass: the purge attempt of a stopped worker timed out on its
// heartbeat and was retried on the next worker): a change that breaks determinism for running passes
// fails here. Keep this file when the workflow changes; record the new shape beside it.
func TestRetentionPass_Replay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.RetentionPass)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/retention_pass_history.json"))
}
