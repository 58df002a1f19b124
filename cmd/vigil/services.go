package main

import (
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// services are one process's domain services, each built once here and handed to every door that
// serves it (REST, the console, MCP), so the three call the same rule owner wired the same way.
type services struct {
	alerts    *alerts.Service
	responses *responses.Service
	agents    *agents.Service
	enricher  *temporal.Enricher // on-demand enrichment and provider tests (a Temporal workflow; REST and MCP)
	comments  *comments.Service  // comments on alerts (REST, MCP, the console)
	timeline  *timeline.Service  // an alert's and a case's one timeline (REST, MCP, the console)
	cases     *cases.Service     // cases (REST, MCP, the console); closes alerts through alerts
}

func newServices(cfg config, st *store.Store, box *secretbox.Box, tc client.Client, log *slog.Logger) services {
	rd := responses.Deps{Store: st, Signaler: temporal.NewRunSignaler(tc), Log: log,
		StepClient: netguard.NewGuard(cfg.SSRFAllowedHosts).HTTPClient(workflowStepTimeout)}
	if box != nil { // a nil *Box in the interface would not read as "no key"
		rd.Secrets = box
	}
	acts := &activities.Activities{Log: log, Enrichment: enrichmentDeps(st, box, cfg)}
	al := alerts.New(st, log)
	return services{
		alerts:    al,
		cases:     cases.New(st, al, log),
		responses: responses.New(rd),
		agents:    newAgentService(cfg, st, box),
		enricher:  temporal.NewEnricher(tc, temporal.NewQueues(cfg.TaskQueuePrefix), acts),
		comments:  comments.New(st),
		timeline:  timeline.New(st),
	}
}
