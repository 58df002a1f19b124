package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/workflows"
)

// probeLimit bounds StartProbe when ctx has no deadline.
const probeLimit = time.Minute

// ProbeWorkflowID is the id StartProbe gives a probe: probe-<uuid>.
func ProbeWorkflowID(id uuid.UUID) string { return "probe-" + id.String() }

// StartProbe starts a workflows.Probe on the actions queue and waits for its result, proving that
// a worker is polling and activities run. It returns the workflow id (to find it in the UI).
func StartProbe(ctx context.Context, c client.Client, queues Queues) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, probeLimit)
		defer cancel()
	}
	id := ProbeWorkflowID(uuid.New())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                queues.Actions,
		WorkflowExecutionTimeout: probeLimit,
	}, workflows.Probe, workflows.ProbeInput{Reason: "probe"})
	if err != nil {
		return "", fmt.Errorf("start probe: %w", err)
	}
	var res workflows.ProbeResult
	if err := run.Get(ctx, &res); err != nil {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 250*time.Millisecond {
			// The server may cut the stream at our deadline a moment before the local timer fires.
			<-ctx.Done()
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The SDK reports a cut-off wait as a gRPC status; keep the context's error matchable.
			err = errors.Join(ctxErr, err)
		}
		return id, fmt.Errorf("probe %s: %w", id, err)
	}
	if res.Host == "" {
		return id, errors.New("probe " + id + ": worker returned no host name")
	}
	return id, nil
}
