package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// AgentEvent is an event raised for agents (API.md §9): committed with the change that raised it,
// delivered by the DeliverEvent workflow.
type AgentEvent struct {
	bun.BaseModel `bun:"table:agent_events"`

	UUID        uuid.UUID       `bun:"uuid,pk,type:uuid"`
	Event       string          `bun:"event"`
	AlertUUID   *uuid.UUID      `bun:"alert_uuid,type:uuid"`
	CaseUUID    *uuid.UUID      `bun:"case_uuid,type:uuid"` // case events (API.md §14)
	TargetAgent *uuid.UUID      `bun:"target_agent,type:uuid"`
	Facts       json.RawMessage `bun:"facts,type:jsonb"`
	Payload     json.RawMessage `bun:"payload,type:jsonb,nullzero"`
	CreatedAt   time.Time       `bun:"created_at"`
}

// RecordAgentEvent inserts e through db (the transaction of the change that raises it, or the
// store's handle when nil), filling uuid, facts and created_at.
func (s *Store) RecordAgentEvent(ctx context.Context, db bun.IDB, e *AgentEvent) error {
	if db == nil {
		db = s.db
	}
	if e.UUID == uuid.Nil {
		e.UUID = uuid.New()
	}
	if len(e.Facts) == 0 {
		e.Facts = json.RawMessage(`{}`)
	}
	e.CreatedAt = s.Now()
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("record agent event %s: %w", e.Event, mapErr(err))
	}
	return nil
}

// Agent events (API.md §9).
const (
	EventAlertEnriched       = "alert.enriched"
	EventAlertUpdated        = "alert.updated"
	EventAlertFindingAdded   = "alert.finding_added"
	EventAlertCommentAdded   = "alert.comment_added"
	EventWorkflowRunComplete = "workflow_run.completed"
	EventApprovalRequested   = "approval.requested"
	EventApprovalDecided     = "approval.decided"
)

// RaiseAgentEvent commits e in a transaction of its own (trigger-agents, dispatch-agent); see
// raiseAgentEvent. It reports whether the event was raised.
func (s *Store) RaiseAgentEvent(ctx context.Context, e *AgentEvent) (bool, error) {
	raised := false
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		raised, err = s.raiseAgentEvent(ctx, tx, e, nil)
		return err
	})
	return raised, err
}

// raiseAgentEvent raises e in tx, the transaction of the change that causes it: the agent_events row
// and the start-outbox entry that delivers it commit (or roll back) with the change, and the
// dispatcher is notified at commit (a transactional NOTIFY). An event no active agent is subscribed
// to when it commits is not raised at all (an agent registered later does not receive past events),
// so a Vigil without agents pays one indexed EXISTS per change; an event for one target agent
// (dispatch-agent) is always raised. facts, when not nil, become e.Facts. It reports whether it
// raised e.
func (s *Store) raiseAgentEvent(ctx context.Context, tx bun.IDB, e *AgentEvent, facts map[string]any) (bool, error) {
	if e.TargetAgent == nil {
		var subscribed bool
		err := tx.NewRaw(`SELECT `+agentsSubscribedSQL, e.Event).Scan(ctx, &subscribed)
		if err != nil {
			return false, fmt.Errorf("agents subscribed to %s: %w", e.Event, mapErr(err))
		}
		if !subscribed {
			return false, nil
		}
	}
	return s.raiseSubscribedAgentEvent(ctx, tx, e, facts)
}

// agentsSubscribedSQL is true when an active agent subscribes to the event named by its one argument.
const agentsSubscribedSQL = `EXISTS (SELECT 1 FROM agents WHERE is_active AND events @> ARRAY[?]::text[])`

// raiseSubscribedAgentEvent is raiseAgentEvent once the caller knows an agent subscribes (or the
// event targets one): recordSubscribedAgentEvent, then a NOTIFY on StartChannel in tx, sent when tx
// commits.
func (s *Store) raiseSubscribedAgentEvent(ctx context.Context, tx bun.IDB, e *AgentEvent, facts map[string]any) (bool, error) {
	if err := s.recordSubscribedAgentEvent(ctx, tx, e, facts); err != nil {
		return false, err
	}
	if _, err := tx.NewRaw(`SELECT pg_notify(?, '')`, StartChannel).Exec(ctx); err != nil {
		return false, fmt.Errorf("notify %s: %w", StartChannel, mapErr(err))
	}
	return true, nil
}

// recordSubscribedAgentEvent records event e with facts and its start outbox row in tx, without a
// NOTIFY: the caller wakes the start outbox once tx has committed (s.startWake.wake()).
// FinishEnrichment does, on the pipeline's hot path: a transaction that NOTIFYs holds Postgres's
// global notify lock from before its commit until after its WAL flush (outbox_wake.go), so every
// finish that raised alert.enriched would wait for the one before it to reach the disk.
func (s *Store) recordSubscribedAgentEvent(ctx context.Context, tx bun.IDB, e *AgentEvent, facts map[string]any) error {
	if facts != nil {
		raw, err := json.Marshal(facts)
		if err != nil {
			return fmt.Errorf("encode facts of %s: %w", e.Event, err)
		}
		e.Facts = raw
	}
	if err := s.RecordAgentEvent(ctx, tx, e); err != nil {
		return err
	}
	return insertStart(ctx, tx, StartAgentEvent, e.UUID)
}

// GetAgentEvents loads the events ids in one statement, by uuid; an event that is gone is absent.
func (s *Store) GetAgentEvents(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]AgentEvent, error) {
	var es []AgentEvent
	if len(ids) > 0 {
		if err := s.db.NewSelect().Model(&es).Where("uuid IN (?)", bun.List(ids)).Scan(ctx); err != nil {
			return nil, fmt.Errorf("get %d agent events: %w", len(ids), mapErr(err))
		}
	}
	out := make(map[uuid.UUID]AgentEvent, len(es))
	for _, e := range es {
		out[e.UUID] = e
	}
	return out, nil
}

// SetAgentEventPayloads stores the payload data of each event of payloads (by uuid) unless one is
// stored already, in one statement: the first planner wins, so a retried plan delivers the same data
// as the first.
func (s *Store) SetAgentEventPayloads(ctx context.Context, payloads map[uuid.UUID]json.RawMessage) error {
	if len(payloads) == 0 {
		return nil
	}
	ids, data := make([]uuid.UUID, 0, len(payloads)), make([]string, 0, len(payloads))
	for id, p := range payloads {
		ids, data = append(ids, id), append(data, string(p))
	}
	_, err := s.db.NewRaw(`UPDATE agent_events AS e SET payload = coalesce(e.payload, p.payload::jsonb)
		FROM unnest(?::uuid[], ?::text[]) AS p(uuid, payload) WHERE e.uuid = p.uuid`,
		pgdialectArray(ids), pgdialectArray(data)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("set payloads of %d agent events: %w", len(payloads), mapErr(err))
	}
	return nil
}

// SubscribedAgents lists the active agents subscribed to event, oldest first (their sources,
// severities and filters are matched by the caller, the agents package).
func (s *Store) SubscribedAgents(ctx context.Context, event string) ([]Agent, error) {
	var out []Agent
	err := s.db.NewSelect().Model(&out).Where("is_active").Where("events @> ARRAY[?]::text[]", event).
		OrderExpr("created_at, uuid").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("agents subscribed to %s: %w", event, mapErr(err))
	}
	return out, nil
}
