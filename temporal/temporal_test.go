package temporal_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/temporal/searchattr"
	"github.com/vigil-soc/vigil/workflows"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func dial(t *testing.T) (client.Client, temporal.Config) {
	t.Helper()
	cfg := temporal.Config{
		HostPort:        testenv.TemporalAddress(t),
		Namespace:       "default",
		TaskQueuePrefix: testenv.TaskQueuePrefix(t),
		Codec:           testenv.PayloadCodec(t),
	}
	c, err := temporal.Dial(context.Background(), cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c, cfg
}

// runWorkers runs RunWorkers until the test ends and checks that it stops cleanly.
func runWorkers(t *testing.T, c client.Client, queues temporal.Queues) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- temporal.RunWorkers(ctx, c, queues, &activities.Activities{Log: testLogger()}, testLogger())
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "workers stop cleanly when ctx ends")
		case <-time.After(30 * time.Second):
			t.Error("RunWorkers did not return after cancel")
		}
	})
}

func TestEndToEnd_SearchAttributesWorkersProbe(t *testing.T) {
	c, cfg := dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	require.NoError(t, temporal.RegisterSearchAttributes(ctx, c, cfg.Namespace))
	t.Logf("search attributes registered in %v", time.Since(start))
	require.NoError(t, temporal.RegisterSearchAttributes(ctx, c, cfg.Namespace), "idempotent")
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: cfg.Namespace})
	require.NoError(t, err)
	for _, name := range temporal.SearchAttributeNames() {
		require.Contains(t, resp.GetCustomAttributes(), name)
		require.Equal(t, "Keyword", resp.GetCustomAttributes()[name].String())
	}

	queues := cfg.Queues()
	runWorkers(t, c, queues)

	start = time.Now()
	id, err := temporal.StartProbe(ctx, c, queues)
	require.NoError(t, err)
	t.Logf("probe round trip (start → worker → result) %v", time.Since(start))
	require.True(t, strings.HasPrefix(id, "probe-"), id)

	var res workflows.ProbeResult
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &res))
	require.NotEmpty(t, res.Host)
	require.WithinDuration(t, time.Now(), res.WorkerTime, time.Minute)
	require.WithinDuration(t, time.Now(), res.WorkflowTime, time.Minute)

	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, queues.Actions, desc.GetWorkflowExecutionInfo().GetTaskQueue())

	// The search attributes are usable on a workflow start right away.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "probe-with-attrs-" + testenv.TaskQueuePrefix(t),
		TaskQueue: queues.Actions,
		TypedSearchAttributes: sdktemporal.NewSearchAttributes(
			searchattr.WorkflowName.ValueSet("probe"),
			searchattr.TriggerSource.ValueSet("test"),
		),
	}, workflows.Probe, workflows.ProbeInput{Reason: "attrs"})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, "attrs", res.Reason)

	require.NoError(t, temporal.Check(ctx, c))
}

// On a server that never saw them, the attributes are usable on an eager start the moment
// RegisterSearchAttributes returns: listed is not enough, the server caches a namespace's attributes.
func TestRegisterSearchAttributes_UsableOnAFreshServer(t *testing.T) {
	srv := startSecondTemporal(t, 0)
	t.Cleanup(func() { _ = srv.Stop() })
	cfg := temporal.Config{HostPort: srv.Address(), Namespace: "default", TaskQueuePrefix: testenv.TaskQueuePrefix(t), Codec: testenv.PayloadCodec(t)}
	c, err := temporal.Dial(context.Background(), cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	start := time.Now()
	require.NoError(t, temporal.RegisterSearchAttributes(ctx, c, cfg.Namespace))
	t.Logf("registered and usable in %v", time.Since(start))
	queues := cfg.Queues()
	runWorkers(t, c, queues)
	alertUUID := uuid.NewString()
	attrs := workflows.PipelineSearchAttributes(alertUUID, "generic", "high")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "probe-fresh-" + alertUUID, TaskQueue: queues.Actions, EnableEagerStart: true,
		TypedSearchAttributes: sdktemporal.NewSearchAttributes(attrs.Copy(),
			searchattr.WorkflowName.ValueSet("probe"), searchattr.TriggerSource.ValueSet("test"),
			searchattr.RunStatus.ValueSet("running")),
	}, workflows.Probe, workflows.ProbeInput{Reason: "fresh"})
	require.NoError(t, err)
	var res workflows.ProbeResult
	require.NoError(t, run.Get(ctx, &res))
	require.Eventually(t, func() bool {
		n, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: cfg.Namespace, Query: fmt.Sprintf("VigilAlertUUID = '%s'", alertUUID)})
		return err == nil && n.GetCount() == 1
	}, 10*time.Second, 100*time.Millisecond, "the run is found by its alert uuid")
}

func TestRegisterSearchAttributes_UnknownNamespace(t *testing.T) {
	c, _ := dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := temporal.RegisterSearchAttributes(ctx, c, "no-such-namespace-"+testenv.TaskQueuePrefix(t))
	require.Error(t, err)
}

func TestProbe_NoWorkerTimesOut(t *testing.T) {
	c, _ := dial(t)
	// Nobody polls this prefix's queues: the probe must give up with the caller's deadline.
	queues := temporal.NewQueues(testenv.TaskQueuePrefix(t) + "-idle")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := temporal.StartProbe(ctx, c, queues)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestDial_Failures(t *testing.T) {
	_, err := temporal.Dial(context.Background(), temporal.Config{}, nil)
	require.ErrorContains(t, err, "no host:port")
	// Every client Vigil creates encrypts its payloads: none is made without a codec.
	_, err = temporal.Dial(context.Background(), temporal.Config{HostPort: testenv.TemporalAddress(t)}, nil)
	require.ErrorContains(t, err, "no payload codec")
	_, err = temporal.DialLazy(temporal.Config{HostPort: testenv.TemporalAddress(t)}, nil)
	require.ErrorContains(t, err, "no payload codec")

	// Nothing listens on port 1: the bounded connect fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err = temporal.Dial(ctx, temporal.Config{HostPort: "127.0.0.1:1", Codec: testenv.PayloadCodec(t)}, nil)
	require.Error(t, err)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestDialLazy_CheckReportsServerState(t *testing.T) {
	_, err := temporal.DialLazy(temporal.Config{}, nil)
	require.ErrorContains(t, err, "no host:port")

	// Nothing listens on port 1: the lazy client is created anyway, and Check reports the failure
	// within its 2 s bound.
	down, err := temporal.DialLazy(temporal.Config{HostPort: "127.0.0.1:1", Codec: testenv.PayloadCodec(t)}, nil)
	require.NoError(t, err)
	defer down.Close()
	start := time.Now()
	require.Error(t, temporal.Check(context.Background(), down))
	require.Less(t, time.Since(start), 5*time.Second)

	up, err := temporal.DialLazy(temporal.Config{HostPort: testenv.TemporalAddress(t), Codec: testenv.PayloadCodec(t)}, testLogger())
	require.NoError(t, err)
	defer up.Close()
	require.NoError(t, temporal.Check(context.Background(), up))
}
