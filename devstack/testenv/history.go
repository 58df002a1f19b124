package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

// WriteHistory writes the Temporal history of workflowID's latest run to path as JSON, the form
// worker.WorkflowReplayer reads (the replay tests' testdata). Payloads are written decoded (this
// binary's PayloadCodec, which the harness clients encrypt with, has a random key that no later
// replay knows): the replayer reads them as plain JSON.
func WriteHistory(tb testing.TB, c client.Client, workflowID, path string) {
	tb.Helper()
	codec := PayloadCodec(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			tb.Fatalf("history of %s: %v", workflowID, err)
		}
		h.Events = append(h.Events, ev)
	}
	err := proxy.VisitPayloads(ctx, &h, proxy.VisitPayloadsOptions{SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
			return codec.Decode(p)
		}})
	if err != nil {
		tb.Fatalf("decode history of %s: %v", workflowID, err)
	}
	raw, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	if err != nil {
		tb.Fatalf("encode history of %s: %v", workflowID, err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		tb.Fatalf("write history of %s: %v", workflowID, err)
	}
}
