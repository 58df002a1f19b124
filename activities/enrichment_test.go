package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"
)

func TestEnrichActivities_NotConfigured(t *testing.T) {
	a := &Activities{}
	_, err := a.EnrichPlan(context.Background(), EnrichPlanInput{})
	var appErr *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable())
	_, err = a.EnrichStep(context.Background(), EnrichStepInput{})
	require.ErrorAs(t, err, &appErr)
	_, err = a.EnrichRecord(context.Background(), EnrichRecordInput{})
	require.ErrorAs(t, err, &appErr)
}
