// Package workflows holds Vigil's Temporal workflows: deterministic functions Temporal executes and
// replays, each an orchestration of activities (package activities, adapters over the domain/ rule
// owners): the rules they apply belong to those owners, reached through activities.
//
//   - AlertPipeline (id alert-<alert uuid>): one accepted alert from extraction to Enriched, its
//     enrichment and grouping (docs/INGEST.md).
//   - EnrichIndicators, EnrichIndicator, ProviderCall: the enrichment of an alert's indicators, of
//     one indicator, and one provider call (docs/ENRICHMENT-ENGINE.md).
//   - Probe: one activity on a worker, the client → server → worker → activity check `vigil dev`
//     runs at start.
//   - WorkflowRun (id workflow-run-<run uuid>): one run of a user's response workflow, its approval
//     gate and its steps (docs/WORKFLOWS.md).
//   - DeliverEvent, DeliverEvents: agent events handed to the agents that receive them
//     (docs/WEBHOOKS.md).
//   - RetentionPass: one pass of the retention schedule (docs/OPERATIONS.md "Retention").
//
// Package temporal registers them under their Go names and starts them; the ids come from kit/ids,
// the search-attribute keys from temporal/searchattr. Registered names, signal names and the JSON of
// inputs and outputs are recorded in running histories: never rename them, and change a code path
// only behind a version a running execution replays as it ran (the *_replay_test.go files replay
// recorded histories under testdata/; docs/DEVELOPING.md "Glossary"). workflowcheck, run by `make
// lint`, checks every function here for determinism.
package workflows
