package main

import (
	"time"

	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/api"
	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// workflowStepTimeout bounds one workflow step's HTTP exchange (steps set their own, up to 300 s).
const workflowStepTimeout = 310 * time.Second

// wireWorkflowRunAPI fills the API's response-workflow dependencies.
func wireWorkflowRunAPI(cfg config, st *store.Store, tc client.Client, apiCfg *api.Config, deps *api.Deps) {
	apiCfg.SlackSigningSecret = cfg.SlackSigningSecret
	deps.Workflows = st
	deps.RunSignaler = temporal.NewRunSignaler(tc)
	deps.WorkflowStepClient = netguard.NewGuard(cfg.SSRFAllowedHosts).HTTPClient(workflowStepTimeout)
}

// wireWorkflowRunActivities fills the workers' response-workflow dependencies.
func wireWorkflowRunActivities(cfg config, st *store.Store, box *secretbox.Box, acts *activities.Activities) {
	guard := netguard.NewGuard(cfg.SSRFAllowedHosts)
	acts.WorkflowRuns = st
	acts.RunSecrets = box
	acts.StepClient = guard.HTTPClient(workflowStepTimeout)
	ac := cfg.Approvals
	ac.PublicBaseURL = cfg.PublicBaseURL
	acts.Approvals = approvals.NewNotifier(ac, guard.HTTPClient(30*time.Second))
}
