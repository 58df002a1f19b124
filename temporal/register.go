package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/workflows"
)

// Register registers every workflow and activity that runs on task queues of kind. It is the one
// place that decides what runs where: add new workflows and activities here, under their queue.
// Activities are registered one method value at a time so each lands only on its own queue.
func Register(kind QueueKind, r Registrar, acts *activities.Activities) {
	switch kind {
	case QueuePipeline:
		registerEnrichmentLocal(r, acts)
		registerPipeline(r, acts)
	case QueueEnrichment:
		registerEnrichment(r, acts)
	case QueueActions:
		r.RegisterWorkflowWithOptions(workflows.Probe, workflow.RegisterOptions{})
		r.RegisterActivityWithOptions(acts.Probe, activity.RegisterOptions{})
		registerWorkflowRuns(r, acts)
		registerAgentEvents(r, acts)
		registerRetention(r, acts)
	}
}

// registerRetention registers the retention pass (the Schedule vigil-retention starts it on the
// actions queue) and its activities.
func registerRetention(r Registrar, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.RetentionPass, workflow.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.RetentionBegin, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.RetentionPurge, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.RetentionFinish, activity.RegisterOptions{})
}
