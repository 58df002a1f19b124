package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

// PayloadStore is what the data of alert events is read from.
type PayloadStore interface {
	GetAlert(ctx context.Context, id uuid.UUID) (store.Alert, error)
	AlertDetail(ctx context.Context, a store.Alert) (store.AlertDetail, error)
	ApplicableWorkflows(ctx context.Context, types []string) ([]store.Workflow, error)
	GetCase(ctx context.Context, id uuid.UUID) (store.Case, error)
	CaseIndicators(ctx context.Context, id uuid.UUID) ([]store.CaseIndicatorRow, error)
}

// Payloads builds the data of alert events (API.md §9): what an agent needs to act without a second
// call. It implements the delivery activities' payload builder.
type Payloads struct {
	store      PayloadStore
	apiBaseURL string
}

// NewPayloads returns a builder reading st; apiBaseURL (PUBLIC_BASE_URL) tells agents where to call
// back.
func NewPayloads(st PayloadStore, apiBaseURL string) *Payloads {
	return &Payloads{store: st, apiBaseURL: apiBaseURL}
}

// AlertEventData is the data of an event about alert: the alert as it stands (with its computed
// malice, enrichment metadata and raw payload), its indicators (providers' raw responses stripped),
// detection rule, the context documents that apply to it, the active workflows applicable to its
// indicators' types, api_base_url, and the event's facts (what changed) beside them. subject is what
// the agents' filters are matched against; found is false when the alert is gone.
func (p *Payloads) AlertEventData(ctx context.Context, alert uuid.UUID, facts json.RawMessage) (any, targeting.Subject, bool, error) {
	a, err := p.store.GetAlert(ctx, alert)
	if errors.Is(err, store.ErrNotFound) {
		return nil, targeting.Subject{}, false, nil
	}
	if err != nil {
		return nil, targeting.Subject{}, false, fmt.Errorf("alert event data: %w", err)
	}
	d, err := p.store.AlertDetail(ctx, a)
	if err != nil {
		return nil, targeting.Subject{}, false, fmt.Errorf("alert event data: %w", err)
	}
	types := map[string]bool{}
	inds := make([]map[string]any, len(d.Indicators))
	for i, ind := range d.Indicators {
		types[ind.Type] = true
		inds[i] = map[string]any{"uuid": ind.UUID, "type": ind.Type, "value": ind.Value, "malice": ind.Malice,
			"malice_source": ind.MaliceSource, "is_enriched": ind.IsEnriched, "enrichment_results": ind.ResultsWithoutRaw(),
			"first_seen": ind.FirstSeen.UTC(), "last_seen": ind.LastSeen.UTC()}
	}
	wfs, err := p.store.ApplicableWorkflows(ctx, slices.Sorted(maps.Keys(types)))
	if err != nil {
		return nil, targeting.Subject{}, false, fmt.Errorf("alert event data: %w", err)
	}
	data := map[string]any{}
	if len(facts) > 0 {
		if err := json.Unmarshal(facts, &data); err != nil {
			return nil, targeting.Subject{}, false, fmt.Errorf("alert event facts: %w", err)
		}
	}
	data["alert"] = alertData(a, d)
	data["indicators"] = inds
	data["detection_rule"] = ruleData(d.DetectionRule)
	docs := make([]map[string]any, len(d.ContextDocuments))
	for i, c := range d.ContextDocuments {
		docs[i] = map[string]any{"uuid": c.UUID, "title": c.Title, "document_type": c.DocumentType, "content": c.Content,
			"tags": c.Tags, "updated_at": c.UpdatedAt.UTC()}
	}
	data["context_documents"] = docs
	workflows := make([]map[string]any, len(wfs))
	for i, w := range wfs {
		workflows[i] = map[string]any{"uuid": w.UUID, "name": w.Name, "description": w.Description, "workflow_type": w.WorkflowType,
			"indicator_types": w.IndicatorTypes, "approval_mode": w.ApprovalMode, "risk_level": w.RiskLevel, "version": w.Version}
	}
	data["workflows"] = workflows
	data["api_base_url"] = p.apiBaseURL
	subject := store.SubjectFor(a.SourceName, a.Severity, a.Title, a.Tags, d.DetectionRule)
	return data, subject, true, nil
}

// CaseEventData is the data of an event about case id (case.created, case.updated,
// case.alert_added): the case as it stands (its severity, malice, alert count and distinct
// indicators), api_base_url and the event's facts; for case.alert_added (alert set) also the alert
// that joined, as alert events carry it. subject is what the agents' filters are matched against:
// the alert's for case.alert_added, else the case's (its severity, title and tags; no source, so an
// agent filtered on sources hears only of alerts joining cases). found is false when the case (or
// the alert) is gone.
func (p *Payloads) CaseEventData(ctx context.Context, id uuid.UUID, alert *uuid.UUID, facts json.RawMessage) (any, targeting.Subject, bool, error) {
	c, err := p.store.GetCase(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, targeting.Subject{}, false, nil
	}
	if err != nil {
		return nil, targeting.Subject{}, false, fmt.Errorf("case event data: %w", err)
	}
	inds, err := p.store.CaseIndicators(ctx, id)
	if err != nil {
		return nil, targeting.Subject{}, false, fmt.Errorf("case event data: %w", err)
	}
	data := map[string]any{}
	subject := store.SubjectFor("", c.EffectiveSeverity, c.Title, c.Tags, nil)
	if alert != nil {
		ad, as, found, err := p.AlertEventData(ctx, *alert, facts)
		if err != nil || !found {
			return nil, targeting.Subject{}, found, err
		}
		data, subject = ad.(map[string]any), as
	} else if len(facts) > 0 {
		if err := json.Unmarshal(facts, &data); err != nil {
			return nil, targeting.Subject{}, false, fmt.Errorf("case event facts: %w", err)
		}
	}
	data["case"] = CaseData(c, inds)
	data["api_base_url"] = p.apiBaseURL
	return data, subject, true, nil
}

// CaseData is a case as agents receive it: the fields of GET /v1/cases/{uuid}.
func CaseData(c store.Case, inds []store.CaseIndicatorRow) map[string]any {
	if inds == nil {
		inds = []store.CaseIndicatorRow{}
	}
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"uuid": c.UUID, "case_number": c.Number(), "title": c.Title, "description": c.Description,
		"severity": c.EffectiveSeverity, "severity_override": c.Severity, "status": c.Status, "assignee": c.Assignee,
		"close_classification": c.CloseClassification, "tags": tags, "alert_count": c.AlertCount, "malice": c.Malice,
		"indicators": inds, "created_at": c.CreatedAt.UTC(), "updated_at": c.UpdatedAt.UTC(), "closed_at": utcPtr(c.ClosedAt)}
}

// alertData is the alert of an event's data: the fields of GET /v1/alerts/{uuid} with the computed
// malice, plus the enrichment metadata.
func alertData(a store.Alert, d store.AlertDetail) map[string]any {
	return map[string]any{"uuid": a.UUID, "title": a.Title, "description": a.Description, "severity": a.Severity,
		"status": a.Status, "source_name": a.SourceName, "occurred_at": a.OccurredAt.UTC(), "ingested_at": a.IngestedAt.UTC(),
		"tags": a.Tags, "malice": d.Malice, "case_uuid": a.CaseUUID, "malice_override": a.MaliceOverride, "malice_override_source": a.MaliceOverrideSource,
		"enrichment_status": a.EnrichmentStatus, "is_enriched": a.IsEnriched, "enriched_at": utcPtr(a.EnrichedAt),
		"close_classification": a.CloseClassification, "acknowledged_at": utcPtr(a.AcknowledgedAt),
		"triaged_at": utcPtr(a.TriagedAt), "closed_at": utcPtr(a.ClosedAt), "duplicate_count": a.DuplicateCount,
		"raw_payload": a.RawPayload, "created_at": a.CreatedAt.UTC(), "updated_at": a.UpdatedAt.UTC(),
		"metadata": map[string]any{"indicator_count": len(d.Indicators), "detection_rule_matched": d.RuleMatched(),
			"context_documents_applied": len(d.ContextDocuments),
			"enrichment":                map[string]any{"succeeded": d.EnrichmentSucceeded, "failed": d.EnrichmentFailed}}}
}

func ruleData(r *store.DetectionRule) any {
	if r == nil {
		return nil
	}
	return map[string]any{"uuid": r.UUID, "name": r.Name, "source_name": r.SourceName, "source_rule_id": r.SourceRuleID,
		"severity": r.Severity, "mitre_tactics": r.MitreTactics, "mitre_techniques": r.MitreTechniques, "data_sources": r.DataSources,
		"documentation": r.Documentation, "is_stub": r.IsStub}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
