package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// WorkflowsForIndicatorTypes returns the active workflows that accept at least one of types, or every
// type (an empty indicator_types), by name: the candidates a launcher offers for indicators of those
// types. Which candidate fits which indicator is responses.Fits' rule.
func (s *Store) WorkflowsForIndicatorTypes(ctx context.Context, types []string) ([]Workflow, error) {
	out := []Workflow{}
	if len(types) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Where("deleted_at IS NULL AND state = ?", WorkflowStateActive).
		Where("(indicator_types && ?::text[] OR cardinality(indicator_types) = 0)", pgdialectArray(types)).
		OrderExpr("name, uuid").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("workflows for indicator types %v: %w", types, mapErr(err))
	}
	return out, nil
}

// ListPendingApprovals returns up to limit pending requests that have not expired at now, the soonest to
// expire first, with their decisions (the partial index workflow_approval_requests_pending_idx;
// PendingApprovals counts them).
func (s *Store) ListPendingApprovals(ctx context.Context, now time.Time, limit int) ([]ApprovalRequest, error) {
	out := []ApprovalRequest{}
	err := s.db.NewSelect().Model(&out).Where("status = ? AND expires_at > ?", ApprovalPending, now).
		OrderExpr("expires_at ASC, uuid ASC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", mapErr(err))
	}
	if err := s.loadDecisions(ctx, s.db, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RunContext is what a gated run acts on, for its approval request: the alert (uuid and title, nil
// without one), the steps of the workflow version the run executes, and the indicator's malice.
type RunContext struct {
	AlertUUID  *uuid.UUID
	AlertTitle string
	Steps      json.RawMessage // the version's steps; nil when the version is gone
	// ApprovalMode and Tags are what the version declares ("" and nil when the version is gone).
	ApprovalMode string
	Tags         []string
	Malice       string // the indicator's malice; "" when no such indicator is stored
}

// RunContexts loads the RunContext of each of runs in one statement.
func (s *Store) RunContexts(ctx context.Context, runs []uuid.UUID) (map[uuid.UUID]RunContext, error) {
	out := make(map[uuid.UUID]RunContext, len(runs))
	if len(runs) == 0 {
		return out, nil
	}
	var rows []struct {
		Run    uuid.UUID       `bun:"run_uuid"`
		Alert  *uuid.UUID      `bun:"alert_uuid"`
		Title  *string         `bun:"title"`
		Steps  json.RawMessage `bun:"steps"`
		Malice *string         `bun:"malice"`
		Mode   *string         `bun:"approval_mode"`
		Tags   json.RawMessage `bun:"tags"`
	}
	err := s.db.NewRaw(`SELECT r.uuid AS run_uuid, r.alert_uuid, a.title, v.definition->'steps' AS steps, i.malice,
		v.definition->>'approval_mode' AS approval_mode, v.definition->'tags' AS tags
		FROM workflow_runs r
		LEFT JOIN alerts a ON a.uuid = r.alert_uuid
		LEFT JOIN workflow_versions v ON v.workflow_uuid = r.workflow_uuid AND v.version = r.workflow_version
		LEFT JOIN indicators i ON i.type = r.indicator_type AND i.value = r.indicator_value
		WHERE r.uuid IN (?)`, bun.List(runs)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("run contexts: %w", mapErr(err))
	}
	for _, r := range rows {
		c := RunContext{AlertUUID: r.Alert, Steps: r.Steps}
		if r.Title != nil {
			c.AlertTitle = *r.Title
		}
		if r.Malice != nil {
			c.Malice = *r.Malice
		}
		if r.Mode != nil {
			c.ApprovalMode = *r.Mode
		}
		if len(r.Tags) > 0 {
			_ = json.Unmarshal(r.Tags, &c.Tags) // tags the version does not hold as a list of strings are left out
		}
		out[r.Run] = c
	}
	return out, nil
}
