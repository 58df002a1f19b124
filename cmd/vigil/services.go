package main

import (
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/comments"
	vconfig "github.com/vigil-soc/vigil/domain/config"
	ingestion "github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
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

	sources *sources.Registry  // the source plugins
	ingest  *ingestion.Service // ingestion, with the integrations and mappings it caches
	apiKeys *apikeys.Service   // API-key changes; revocations reach the doors' key cache at once
	config  vconfig.Owners     // detection rules, documents, mappings, integrations, providers, extractions, exclusions
}

func newServices(cfg config, st *store.Store, box *secretbox.Box, tc client.Client, authn *auth.Authenticator, log *slog.Logger) services {
	rd := responses.Deps{Store: st, Signaler: temporal.NewRunSignaler(tc), Log: log,
		StepClient: netguard.NewGuard(cfg.SSRFAllowedHosts).HTTPClient(workflowStepTimeout)}
	var (
		opener ingestion.SecretOpener
		sealer vconfig.Sealer
	)
	if box != nil { // a nil *Box in the interface would not read as "no key"
		rd.Secrets, opener, sealer = box, box, box
	}
	acts := &activities.Activities{Log: log, Enrichment: enrichmentDeps(st, box, cfg)}
	al := alerts.New(st, log)
	reg := sources.NewRegistry()
	in := ingestion.New(st, reg, opener, time.Duration(cfg.AlertDedupHours)*time.Hour)
	return services{
		sources:   reg,
		ingest:    in,
		apiKeys:   apikeys.New(st, st, authn),
		config:    vconfig.NewOwners(st, reg, sealer, in),
		alerts:    al,
		cases:     cases.New(st, al, log),
		responses: responses.New(rd),
		agents:    newAgentService(cfg, st, box),
		enricher:  temporal.NewEnricher(tc, temporal.NewQueues(cfg.TaskQueuePrefix), acts),
		comments:  comments.New(st),
		timeline:  timeline.New(st),
	}
}
