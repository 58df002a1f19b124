package workflows_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/workflows"
)

func TestProbe_ReturnsWorkerAnswer(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	workerTime := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	env.OnActivity(a.Probe, mock.Anything).Return(activities.ProbeResult{Host: "worker-7", Time: workerTime}, nil).Once()

	env.ExecuteWorkflow(workflows.Probe, workflows.ProbeInput{Reason: "unit"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ProbeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "unit", res.Reason)
	require.Equal(t, "worker-7", res.Host)
	require.True(t, workerTime.Equal(res.WorkerTime))
	require.False(t, res.WorkflowTime.IsZero())
	env.AssertExpectations(t)
}

func TestProbe_RealActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Activities{})

	before := time.Now().Add(-time.Second)
	env.ExecuteWorkflow(workflows.Probe, workflows.ProbeInput{})

	require.NoError(t, env.GetWorkflowError())
	var res workflows.ProbeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.NotEmpty(t, res.Host)
	require.True(t, res.WorkerTime.After(before), "worker time %v is the activity's clock", res.WorkerTime)
}

func TestProbe_RetriesThenFails(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	env.OnActivity(a.Probe, mock.Anything).Return(activities.ProbeResult{}, errors.New("worker sick")).Times(3)

	env.ExecuteWorkflow(workflows.Probe, workflows.ProbeInput{})

	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, err.Error(), "probe activity")
	var appErr *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Contains(t, appErr.Error(), "worker sick")
	env.AssertExpectations(t) // exactly MaximumAttempts (3) tries, then it gives up
}

func TestProbe_RetryRecovers(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	env.OnActivity(a.Probe, mock.Anything).Return(activities.ProbeResult{}, errors.New("blip")).Once()
	env.OnActivity(a.Probe, mock.Anything).Return(activities.ProbeResult{Host: "h", Time: time.Unix(1, 0)}, nil).Once()

	env.ExecuteWorkflow(workflows.Probe, workflows.ProbeInput{})

	require.NoError(t, env.GetWorkflowError())
	var res workflows.ProbeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "h", res.Host)
}
