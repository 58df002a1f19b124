package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/vigil-soc/vigil/workflows"
)

// TestDeliverEvents_Replay replays histories recorded from real runs against the current code: a
// change that breaks running deliveries fails here. DeliverEvent (one event: a plan, one activity per
// agent retried under the agent's policy; recorded with three attempts) and DeliverEvents (a batch:
// one plan, one activity per agent, a failed first attempt retried on its own), both recorded with
// the command in temporal/agent_events_test.go (recordEventsHistory).
func TestDeliverEvents_Replay(t *testing.T) {
	for _, name := range []string{"deliver_event_history.json", "deliver_events_history.json"} {
		t.Run(name, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.DeliverEvent)
			r.RegisterWorkflow(workflows.DeliverEvents)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+name))
		})
	}
}
