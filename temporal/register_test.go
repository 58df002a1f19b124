package temporal_test

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/workflows"
)

// The production registration must work on real workers and on the SDK's test environments.
var (
	_ temporal.Registrar = worker.Worker(nil)
	_ temporal.Registrar = (*testsuite.TestWorkflowEnvironment)(nil)
)

type recorder struct{ workflows, activities []string }

func funcName(f any) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	name = name[strings.LastIndex(name, ".")+1:]
	return strings.TrimSuffix(name, "-fm") // method values
}

func (r *recorder) RegisterWorkflowWithOptions(w any, _ workflow.RegisterOptions) {
	r.workflows = append(r.workflows, funcName(w))
}

func (r *recorder) RegisterActivityWithOptions(a any, _ activity.RegisterOptions) {
	r.activities = append(r.activities, funcName(a))
}

func TestRegister_PerQueue(t *testing.T) {
	acts := &activities.Activities{}
	got := map[temporal.QueueKind]*recorder{}
	for _, kind := range temporal.QueueKinds() {
		r := &recorder{}
		temporal.Register(kind, r, acts)
		got[kind] = r
	}
	require.Contains(t, got[temporal.QueueActions].workflows, "Probe")
	require.Contains(t, got[temporal.QueueActions].activities, "Probe")

	// Nothing registered twice across queues (a workflow lives on exactly one queue).
	seen := map[string]temporal.QueueKind{}
	for kind, r := range got {
		for _, w := range r.workflows {
			prev, dup := seen["wf:"+w]
			require.False(t, dup, "workflow %s on %s and %s", w, prev, kind)
			seen["wf:"+w] = kind
		}
	}
	// Unknown kinds register nothing.
	r := &recorder{}
	temporal.Register("bogus", r, acts)
	require.Empty(t, r.workflows)
	require.Empty(t, r.activities)
}

func TestRegister_InTestEnvironment(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	temporal.Register(temporal.QueueActions, env, &activities.Activities{})
	env.ExecuteWorkflow(workflows.Probe, workflows.ProbeInput{Reason: "registered"})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ProbeResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.NotEmpty(t, res.Host)
}
