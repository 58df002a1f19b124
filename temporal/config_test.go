package temporal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/temporal"
)

func TestNewQueues(t *testing.T) {
	tests := []struct {
		prefix string
		want   temporal.Queues
	}{
		{"", temporal.Queues{Pipeline: "vigil-pipeline", Enrichment: "vigil-enrichment", Actions: "vigil-actions"}},
		{"vigil", temporal.Queues{Pipeline: "vigil-pipeline", Enrichment: "vigil-enrichment", Actions: "vigil-actions"}},
		{"vigil-t-store-1a2b", temporal.Queues{Pipeline: "vigil-t-store-1a2b-pipeline", Enrichment: "vigil-t-store-1a2b-enrichment", Actions: "vigil-t-store-1a2b-actions"}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			q := temporal.NewQueues(tt.prefix)
			require.Equal(t, tt.want, q)
			require.Equal(t, q, temporal.Config{TaskQueuePrefix: tt.prefix}.Queues())
			require.Equal(t, q.Pipeline, q.Name(temporal.QueuePipeline))
			require.Equal(t, q.Enrichment, q.Name(temporal.QueueEnrichment))
			require.Equal(t, q.Actions, q.Name(temporal.QueueActions))
			require.Empty(t, q.Name("bogus"))
		})
	}
	require.Equal(t, []temporal.QueueKind{temporal.QueuePipeline, temporal.QueueEnrichment, temporal.QueueActions}, temporal.QueueKinds())
}

func TestSearchAttributeNames(t *testing.T) {
	require.Equal(t, []string{
		"VigilAlertUUID", "VigilSource", "VigilSeverity",
		"VigilWorkflowName", "VigilTriggerSource", "VigilRunStatus",
	}, temporal.SearchAttributeNames())
}
