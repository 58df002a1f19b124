package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/enrichment"
)

func TestEnrichActivities_NotConfigured(t *testing.T) {
	a := &Activities{}
	_, err := a.EnrichPlan(context.Background(), enrichment.PlanInput{})
	var appErr *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable())
	_, err = a.EnrichStep(context.Background(), enrichment.StepInput{})
	require.ErrorAs(t, err, &appErr)
	_, err = a.EnrichRecord(context.Background(), enrichment.RecordInput{})
	require.ErrorAs(t, err, &appErr)
}
