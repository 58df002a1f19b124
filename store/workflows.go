package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Workflow states, approval modes and run statuses (API.md §8).
const (
	WorkflowStateDraft    = "draft"
	WorkflowStateActive   = "active"
	WorkflowStateInactive = "inactive"

	ApprovalModeAlways    = "always"
	ApprovalModeAgentOnly = "agent_only"
	ApprovalModeNever     = "never"

	RunQueued          = "queued"
	RunPendingApproval = "pending_approval"
	RunRunning         = "running"
	RunSucceeded       = "succeeded"
	RunFailed          = "failed"
	RunTimedOut        = "timed_out"
	RunRejected        = "rejected"
	RunExpired         = "expired"
	RunCancelled       = "cancelled"

	ApprovalPending   = "pending"
	ApprovalApproved  = "approved"
	ApprovalRejected  = "rejected"
	ApprovalExpired   = "expired"
	ApprovalCancelled = "cancelled"
)

// RunStatuses returns every workflow run status in lifecycle order.
func RunStatuses() []string {
	return []string{RunQueued, RunPendingApproval, RunRunning, RunSucceeded, RunFailed, RunTimedOut, RunRejected, RunExpired, RunCancelled}
}

// WorkflowStates returns every workflow state (API.md §8).
func WorkflowStates() []string {
	return []string{WorkflowStateDraft, WorkflowStateActive, WorkflowStateInactive}
}

// ApprovalStatuses returns every approval request status (API.md §8).
func ApprovalStatuses() []string {
	return []string{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired, ApprovalCancelled}
}

// WorkflowNames returns the names of the workflows ids (deleted ones too: a run outlives its
// workflow's deletion), by uuid.
func (s *Store) WorkflowNames(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	out := make(map[uuid.UUID]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		UUID uuid.UUID `bun:"uuid"`
		Name string    `bun:"name"`
	}
	if err := s.db.NewSelect().Table("workflows").Column("uuid", "name").Where("uuid IN (?)", bun.List(ids)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("workflow names: %w", err)
	}
	for _, r := range rows {
		out[r.UUID] = r.Name
	}
	return out, nil
}

// RunFinal reports whether a run status is final.
func RunFinal(status string) bool {
	switch status {
	case RunSucceeded, RunFailed, RunTimedOut, RunRejected, RunExpired, RunCancelled:
		return true
	}
	return false
}

// Workflow is a stored response workflow definition (its current version).
type Workflow struct {
	bun.BaseModel `bun:"table:workflows"`

	UUID                        uuid.UUID       `bun:"uuid,pk,type:uuid"`
	Name                        string          `bun:"name"`
	Description                 *string         `bun:"description"`
	Documentation               *string         `bun:"documentation"`
	WorkflowType                string          `bun:"workflow_type"`
	IndicatorTypes              []string        `bun:"indicator_types,array"`
	State                       string          `bun:"state"`
	Steps                       json.RawMessage `bun:"steps,type:jsonb"`
	TimeoutSeconds              int             `bun:"timeout_seconds"`
	RetryMaxAttempts            int             `bun:"retry_max_attempts"`
	RetryInitialIntervalSeconds int             `bun:"retry_initial_interval_seconds"`
	ApprovalMode                string          `bun:"approval_mode"`
	ApprovalTimeoutSeconds      int             `bun:"approval_timeout_seconds"`
	ApprovalChannel             *string         `bun:"approval_channel"`
	RequiredApprovals           int             `bun:"required_approvals"`
	RiskLevel                   string          `bun:"risk_level"`
	Tags                        []string        `bun:"tags,array"`
	TimeSavedMinutes            *int            `bun:"time_saved_minutes"`
	IsSystem                    bool            `bun:"is_system"`
	SystemKey                   *string         `bun:"system_key"`
	RequiredSecrets             []string        `bun:"required_secrets,array"`
	SystemDisabled              bool            `bun:"system_disabled"`
	Version                     int             `bun:"version"`
	DeletedAt                   *time.Time      `bun:"deleted_at"`
	CreatedAt                   time.Time       `bun:"created_at"`
	UpdatedAt                   time.Time       `bun:"updated_at"`
}

// WorkflowDefinition is the part of a workflow that is versioned: what runs and how it is gated.
type WorkflowDefinition struct {
	Name                        string          `json:"name"`
	Description                 *string         `json:"description"`
	Documentation               *string         `json:"documentation"`
	WorkflowType                string          `json:"workflow_type"`
	IndicatorTypes              []string        `json:"indicator_types"`
	Steps                       json.RawMessage `json:"steps"`
	TimeoutSeconds              int             `json:"timeout_seconds"`
	RetryMaxAttempts            int             `json:"retry_max_attempts"`
	RetryInitialIntervalSeconds int             `json:"retry_initial_interval_seconds"`
	ApprovalMode                string          `json:"approval_mode"`
	ApprovalTimeoutSeconds      int             `json:"approval_timeout_seconds"`
	ApprovalChannel             *string         `json:"approval_channel"`
	RequiredApprovals           int             `json:"required_approvals"`
	RiskLevel                   string          `json:"risk_level"`
	Tags                        []string        `json:"tags"`
	TimeSavedMinutes            *int            `json:"time_saved_minutes"`
}

// Definition returns w's versioned part.
func (w Workflow) Definition() WorkflowDefinition {
	return WorkflowDefinition{Name: w.Name, Description: w.Description, Documentation: w.Documentation,
		WorkflowType: w.WorkflowType, IndicatorTypes: w.IndicatorTypes, Steps: w.Steps, TimeoutSeconds: w.TimeoutSeconds,
		RetryMaxAttempts: w.RetryMaxAttempts, RetryInitialIntervalSeconds: w.RetryInitialIntervalSeconds,
		ApprovalMode: w.ApprovalMode, ApprovalTimeoutSeconds: w.ApprovalTimeoutSeconds, ApprovalChannel: w.ApprovalChannel,
		RequiredApprovals: w.RequiredApprovals, RiskLevel: w.RiskLevel, Tags: w.Tags, TimeSavedMinutes: w.TimeSavedMinutes}
}

// ApplyDefinition copies d into w.
func (w *Workflow) ApplyDefinition(d WorkflowDefinition) {
	w.Name, w.Description, w.Documentation, w.WorkflowType, w.IndicatorTypes = d.Name, d.Description, d.Documentation, d.WorkflowType, d.IndicatorTypes
	w.Steps, w.TimeoutSeconds, w.RetryMaxAttempts, w.RetryInitialIntervalSeconds = d.Steps, d.TimeoutSeconds, d.RetryMaxAttempts, d.RetryInitialIntervalSeconds
	w.ApprovalMode, w.ApprovalTimeoutSeconds, w.ApprovalChannel, w.RequiredApprovals = d.ApprovalMode, d.ApprovalTimeoutSeconds, d.ApprovalChannel, d.RequiredApprovals
	w.RiskLevel, w.Tags, w.TimeSavedMinutes = d.RiskLevel, d.Tags, d.TimeSavedMinutes
}

// WorkflowVersion is one kept version of a workflow's definition.
type WorkflowVersion struct {
	bun.BaseModel `bun:"table:workflow_versions"`

	WorkflowUUID uuid.UUID       `bun:"workflow_uuid,pk,type:uuid"`
	Version      int             `bun:"version,pk"`
	Definition   json.RawMessage `bun:"definition,type:jsonb"`
	CreatedAt    time.Time       `bun:"created_at"`
}

func normalizeWorkflow(w *Workflow) {
	if w.IndicatorTypes == nil {
		w.IndicatorTypes = []string{}
	}
	if w.Tags == nil {
		w.Tags = []string{}
	}
	if w.RequiredSecrets == nil {
		w.RequiredSecrets = []string{}
	}
}

func insertVersion(ctx context.Context, db bun.IDB, w *Workflow, now time.Time) error {
	def, err := json.Marshal(w.Definition())
	if err != nil {
		return fmt.Errorf("encode workflow definition: %w", err)
	}
	v := &WorkflowVersion{WorkflowUUID: w.UUID, Version: w.Version, Definition: def, CreatedAt: now}
	if _, err := db.NewInsert().Model(v).Exec(ctx); err != nil {
		return fmt.Errorf("insert workflow version: %w", mapErr(err))
	}
	return nil
}

// CreateWorkflow inserts w as version 1 and keeps that version.
func (s *Store) CreateWorkflow(ctx context.Context, w *Workflow) error {
	now := s.Now()
	if w.UUID == uuid.Nil {
		w.UUID = uuid.New()
	}
	w.Version, w.CreatedAt, w.UpdatedAt = 1, now, now
	normalizeWorkflow(w)
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(w).Exec(ctx); err != nil {
			return fmt.Errorf("insert workflow: %w", mapErr(err))
		}
		return insertVersion(ctx, tx, w, now)
	})
}

// GetWorkflow loads a workflow that is not deleted.
func (s *Store) GetWorkflow(ctx context.Context, id uuid.UUID) (Workflow, error) {
	var w Workflow
	if err := s.db.NewSelect().Model(&w).Where("uuid = ? AND deleted_at IS NULL", id).Scan(ctx); err != nil {
		return Workflow{}, fmt.Errorf("get workflow %s: %w", id, mapErr(err))
	}
	return w, nil
}

// UpdateWorkflow writes columns of w. When newVersion is true the version is bumped and the new
// definition kept in workflow_versions, in the same transaction.
func (s *Store) UpdateWorkflow(ctx context.Context, w *Workflow, newVersion bool, columns ...string) error {
	now := s.Now()
	w.UpdatedAt = now
	normalizeWorkflow(w)
	columns = append(columns, "updated_at")
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if newVersion {
			var cur int
			if err := tx.NewSelect().Table("workflows").Column("version").Where("uuid = ? AND deleted_at IS NULL", w.UUID).For("UPDATE").Scan(ctx, &cur); err != nil {
				return fmt.Errorf("lock workflow %s: %w", w.UUID, mapErr(err))
			}
			w.Version = cur + 1
			columns = append(columns, "version")
		}
		res, err := tx.NewUpdate().Model(w).Column(columns...).Where("uuid = ? AND deleted_at IS NULL", w.UUID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("update workflow %s: %w", w.UUID, mapErr(err))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("update workflow %s: %w", w.UUID, ErrNotFound)
		}
		if newVersion {
			return insertVersion(ctx, tx, w, now)
		}
		return nil
	})
}

// DeleteWorkflow marks a workflow deleted; its runs and versions stay for audit.
func (s *Store) DeleteWorkflow(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewUpdate().Table("workflows").Set("deleted_at = ?, state = 'inactive', updated_at = ?", s.Now(), s.Now()).
		Where("uuid = ? AND deleted_at IS NULL", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete workflow %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete workflow %s: %w", id, ErrNotFound)
	}
	return nil
}

// WorkflowFilter narrows ListWorkflows.
type WorkflowFilter struct {
	WorkflowType string
	States       []string
	RiskLevels   []string
	Q            string
	SortBy       string // name, state, risk_level, updated_at, created_at
	Desc         bool
	Page         Page
}

// ApplicableWorkflows returns the active workflows (a system workflow is active only when enabled and
// its secrets are stored) that act on at least one of types, by name: what an analyst or agent may run against an alert whose indicators
// have those types.
func (s *Store) ApplicableWorkflows(ctx context.Context, types []string) ([]Workflow, error) {
	out := []Workflow{}
	if len(types) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Where("deleted_at IS NULL AND state = ?", WorkflowStateActive).
		Where("indicator_types && ?::text[]", pgdialectArray(types)).OrderExpr("name, uuid").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("workflows applicable to %v: %w", types, mapErr(err))
	}
	return out, nil
}

// ListWorkflows returns one page of workflows and the total.
func (s *Store) ListWorkflows(ctx context.Context, f WorkflowFilter) ([]Workflow, int, error) {
	var ws []Workflow
	q := s.db.NewSelect().Model(&ws).Where("deleted_at IS NULL")
	if f.WorkflowType != "" {
		q = q.Where("workflow_type = ?", f.WorkflowType)
	}
	if len(f.States) > 0 {
		q = q.Where("state IN (?)", bun.List(f.States))
	}
	if len(f.RiskLevels) > 0 {
		q = q.Where("risk_level IN (?)", bun.List(f.RiskLevels))
	}
	if f.Q != "" {
		like := "%" + escapeWorkflowLike(f.Q) + "%"
		q = q.Where("(name ILIKE ? OR coalesce(description, '') ILIKE ?)", like, like)
	}
	col := "created_at"
	switch f.SortBy {
	case "name", "state", "risk_level", "updated_at", "created_at":
		col = f.SortBy
	}
	dir := "ASC"
	if f.Desc {
		dir = "DESC"
	}
	q = q.OrderExpr("? "+dir+", uuid "+dir, bun.Ident(col))
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list workflows: %w", mapErr(err))
	}
	return ws, int(total), nil
}

func escapeWorkflowLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ListWorkflowVersions returns a workflow's kept versions, newest first.
func (s *Store) ListWorkflowVersions(ctx context.Context, id uuid.UUID, p Page) ([]WorkflowVersion, int, error) {
	var vs []WorkflowVersion
	total, err := s.db.NewSelect().Model(&vs).Where("workflow_uuid = ?", id).OrderExpr("version DESC").
		Limit(p.Limit()).Offset(p.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list workflow versions: %w", mapErr(err))
	}
	return vs, int(total), nil
}

// GetWorkflowVersion loads one kept version's definition.
func (s *Store) GetWorkflowVersion(ctx context.Context, id uuid.UUID, version int) (WorkflowDefinition, error) {
	var v WorkflowVersion
	if err := s.db.NewSelect().Model(&v).Where("workflow_uuid = ? AND version = ?", id, version).Scan(ctx); err != nil {
		return WorkflowDefinition{}, fmt.Errorf("get workflow %s version %d: %w", id, version, mapErr(err))
	}
	var d WorkflowDefinition
	if err := json.Unmarshal(v.Definition, &d); err != nil {
		return WorkflowDefinition{}, fmt.Errorf("decode workflow %s version %d: %w", id, version, err)
	}
	return d, nil
}

// SystemWorkflow is a builtin workflow: seeded by key, active only when every required secret exists.
type SystemWorkflow struct {
	Key             string
	Workflow        Workflow
	RequiredSecrets []string
}

// SeedSystemWorkflows inserts the builtin workflows that are missing (by system key) and then sets
// every system workflow's state from its required secrets. It is idempotent and safe to run from
// several processes at once.
func (s *Store) SeedSystemWorkflows(ctx context.Context, defs []SystemWorkflow) error {
	for _, d := range defs {
		n, err := s.db.NewSelect().Table("workflows").Where("system_key = ?", d.Key).Count(ctx)
		if err != nil {
			return fmt.Errorf("seed %s: %w", d.Key, mapErr(err))
		}
		if n > 0 {
			continue
		}
		w := d.Workflow
		key := d.Key
		w.SystemKey, w.IsSystem, w.RequiredSecrets, w.State = &key, true, d.RequiredSecrets, WorkflowStateInactive
		if err := s.CreateWorkflow(ctx, &w); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("seed %s: %w", d.Key, err)
		}
	}
	return s.SyncSystemWorkflowStates(ctx)
}

// systemState is the state a system workflow must have: active exactly when it is not switched off
// and every secret it needs is stored.
const systemState = `CASE WHEN NOT system_disabled AND required_secrets <@ coalesce((SELECT array_agg(name) FROM workflow_secrets), '{}')
	THEN 'active' ELSE 'inactive' END`

// SyncSystemWorkflowStates re-derives every system workflow's state (see systemState).
func (s *Store) SyncSystemWorkflowStates(ctx context.Context) error {
	_, err := s.db.NewUpdate().Table("workflows").
		Set("state = "+systemState).
		Set("updated_at = ?", s.Now()).
		Where("is_system AND deleted_at IS NULL").
		Where("state <> " + systemState).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("sync system workflow states: %w", mapErr(err))
	}
	return nil
}

// SetSystemWorkflowEnabled switches a system workflow on or off and returns it with its derived
// state (switched on but missing secrets stays inactive).
func (s *Store) SetSystemWorkflowEnabled(ctx context.Context, id uuid.UUID, enabled bool) (Workflow, error) {
	res, err := s.db.NewUpdate().Table("workflows").
		Set("system_disabled = ?, updated_at = ?", !enabled, s.Now()).
		Where("uuid = ? AND is_system AND deleted_at IS NULL", id).Exec(ctx)
	if err != nil {
		return Workflow{}, fmt.Errorf("switch system workflow %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Workflow{}, fmt.Errorf("switch system workflow %s: %w", id, ErrNotFound)
	}
	if err := s.SyncSystemWorkflowStates(ctx); err != nil {
		return Workflow{}, err
	}
	return s.GetWorkflow(ctx, id)
}

// AlertTemplateValues returns the alert fields workflow templates may use as alert.*.
func (s *Store) AlertTemplateValues(ctx context.Context, id uuid.UUID) (map[string]any, error) {
	var row struct {
		UUID       uuid.UUID `bun:"uuid"`
		Title      string    `bun:"title"`
		Severity   string    `bun:"severity"`
		Status     string    `bun:"status"`
		SourceName string    `bun:"source_name"`
		OccurredAt time.Time `bun:"occurred_at"`
		Tags       []string  `bun:"tags,array"`
	}
	err := s.db.NewSelect().Table("alerts").Column("uuid", "title", "severity", "status", "source_name", "occurred_at", "tags").
		Where("uuid = ?", id).Scan(ctx, &row)
	if err != nil {
		return nil, fmt.Errorf("get alert %s: %w", id, mapErr(err))
	}
	tags := make([]any, len(row.Tags))
	for i, t := range row.Tags {
		tags[i] = t
	}
	// The alert's indicators (type, value, malice), in a stable order and at most
	// MaxAlertTemplateIndicators, so a workflow can act on each (for_each over alert.indicators).
	var inds []struct {
		Type   string `bun:"type"`
		Value  string `bun:"value"`
		Malice string `bun:"malice"`
	}
	if err := s.db.NewSelect().TableExpr("alert_indicators AS ai").Join("JOIN indicators AS i ON i.uuid = ai.indicator_uuid").
		ColumnExpr("i.type, i.value, i.malice").Where("ai.alert_uuid = ?", id).OrderExpr("i.type, i.value").
		Limit(MaxAlertTemplateIndicators).Scan(ctx, &inds); err != nil {
		return nil, fmt.Errorf("indicators of alert %s: %w", id, mapErr(err))
	}
	list := make([]any, len(inds))
	for i, in := range inds {
		list[i] = map[string]any{"type": in.Type, "value": in.Value, "malice": in.Malice}
	}
	return map[string]any{"uuid": row.UUID.String(), "title": row.Title, "severity": row.Severity, "status": row.Status,
		"source_name": row.SourceName, "occurred_at": row.OccurredAt.UTC().Format(time.RFC3339Nano), "tags": tags,
		"indicators": list}, nil
}

// MaxAlertTemplateIndicators bounds alert.indicators in a workflow's templates and expressions.
const MaxAlertTemplateIndicators = 500
