package temporal_test

import (
	"crypto/rand"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/temporal/payloadcodec"
	"github.com/vigil-soc/vigil/workflows"
)

// TestReplay_HistoriesWrittenBeforeEncryption replays every history recorded before payloads were
// encrypted (workflows/testdata: unencrypted json/plain payloads) with the data and failure
// converters every Vigil client and worker now uses, with TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT on (the
// upgrade window; without it the worker refuses plaintext payloads, security review round 4, R4-5):
// a run started before the upgrade goes on after it (API.md §16).
func TestReplay_HistoriesWrittenBeforeEncryption(t *testing.T) {
	secret := make([]byte, payloadcodec.KeySize)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	codec, err := payloadcodec.New([]payloadcodec.Key{{ID: "new", Secret: secret}})
	require.NoError(t, err)
	dc := temporal.DataConverter(codec.AllowPlaintext())
	for file, wf := range map[string]any{
		"alert_pipeline_history.json":             workflows.AlertPipeline,
		"alert_pipeline_v1_history.json":          workflows.AlertPipeline,
		"alert_pipeline_v2_history.json":          workflows.AlertPipeline,
		"alert_pipeline_v2_fallback_history.json": workflows.AlertPipeline,
		"provider_call_history.json":              workflows.ProviderCall,
		"workflow_run_history.json":               workflows.WorkflowRun,
		"workflow_run_signal_start_history.json":  workflows.WorkflowRun,
	} {
		t.Run(file, func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: temporal.FailureConverter(dc)})
			require.NoError(t, err)
			r.RegisterWorkflow(wf)
			f, err := os.Open("../workflows/testdata/" + file)
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			// A WorkflowRun checks that its workflow id is its run's: replay under the original id.
			started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
			exec := workflow.Execution{ID: "ReplayId", RunID: started.GetOriginalExecutionRunId()}
			if started.GetWorkflowType().GetName() == "WorkflowRun" {
				var in workflows.WorkflowRunInput
				require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(started.GetInput(), &in))
				exec.ID = ids.WorkflowRun(in.RunUUID)
			}
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: exec}))
		})
	}
	t.Run("refused without the switch", func(t *testing.T) {
		strict := temporal.DataConverter(codec)
		r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: strict, FailureConverter: temporal.FailureConverter(strict)})
		require.NoError(t, err)
		r.RegisterWorkflow(workflows.AlertPipeline)
		require.Error(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "../workflows/testdata/alert_pipeline_v2_history.json"))
	})
}

// TestReplay_FailsWhenOldPayloadsDoNotDecode shows the replay above can fail: a codec that refused
// unencrypted payloads would break every run started before the upgrade.
func TestReplay_FailsWhenOldPayloadsDoNotDecode(t *testing.T) {
	dc := temporal.DataConverter(refusingCodec{})
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: temporal.FailureConverter(dc)})
	require.NoError(t, err)
	r.RegisterWorkflow(workflows.AlertPipeline)
	require.Error(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "../workflows/testdata/alert_pipeline_v2_history.json"))
}

type refusingCodec struct{}

func (refusingCodec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) { return p, nil }
func (refusingCodec) Decode([]*commonpb.Payload) ([]*commonpb.Payload, error) {
	return nil, errors.New("not encrypted")
}
