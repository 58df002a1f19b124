package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/vigil-soc/vigil/workflows"
)

// TestProviderCall_Replay replays a ProviderCall recorded against the real dev server (two steps, the
// second waiting for a rate-limit slot on a durable timer, then the record): a change that breaks
// determinism for running calls fails here.
func TestProviderCall_Replay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.ProviderCall)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/provider_call_history.json"))
}
