package main

import (
	"time"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/api"
	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// workflowStepTimeout bounds one workflow step's HTTP exchange (steps set their own, up to 300 s).
const workflowStepTimeout = 310 * time.Second

// wireWorkflowRunAPI fills the API's response-workflow dependencies (the rules, with the run
// signaler and the steps' HTTP client, are the services' responses.Service).
func wireWorkflowRunAPI(cfg config, st *store.Store, apiCfg *api.Config, deps *api.Deps) {
	apiCfg.SlackSigningSecret = cfg.SlackSigningSecret
	deps.Workflows = st
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
