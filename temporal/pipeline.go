package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/workflows"
)

// registerPipeline registers AlertPipeline and its local activities (pipeline queue).
func registerPipeline(r Registrar, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.AlertPipeline, workflow.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PipelineExtract, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PipelineLink, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PipelineRule, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PipelineFinish, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PipelinePrepare, activity.RegisterOptions{})
	// The first attempt of each provider step of a pipeline (version 2) is a local activity here.
	r.RegisterActivityWithOptions(acts.EnrichStep, activity.RegisterOptions{})
}
