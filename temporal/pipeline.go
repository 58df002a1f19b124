package temporal

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
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
}

// IndicatorEnrichmentStarter starts EnrichIndicator workflows for indicators added to an alert
// through the API (it implements api.IndicatorEnricher).
type IndicatorEnrichmentStarter struct {
	c      client.Client
	queues Queues
}

// NewIndicatorEnrichmentStarter returns a starter on c.
func NewIndicatorEnrichmentStarter(c client.Client, queues Queues) *IndicatorEnrichmentStarter {
	return &IndicatorEnrichmentStarter{c: c, queues: queues}
}

// StartIndicatorEnrichment starts (idempotently) one EnrichIndicator workflow per indicator and
// returns their workflow ids. It stops at the first failure, returning the ids started so far.
func (s *IndicatorEnrichmentStarter) StartIndicatorEnrichment(ctx context.Context, ids []uuid.UUID) ([]string, error) {
	if s == nil || s.c == nil {
		return nil, errors.New("start indicator enrichment: no temporal client")
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		wid, err := StartEnrichIndicator(ctx, s.c, s.queues, id)
		if err != nil {
			return out, fmt.Errorf("enrich indicator %s: %w", id, err)
		}
		out = append(out, wid)
	}
	return out, nil
}
