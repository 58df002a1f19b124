package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

// PayloadStore is what the data of alert events is read from.
type PayloadStore interface {
	GetAlerts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]store.Alert, error)
	AlertDetails(ctx context.Context, as []store.Alert) (map[uuid.UUID]store.AlertDetail, error)
	ApplicableWorkflows(ctx context.Context, types []string) ([]store.Workflow, error)
	GetCase(ctx context.Context, id uuid.UUID) (store.Case, error)
	CaseIndicators(ctx context.Context, id uuid.UUID) ([]store.CaseIndicatorRow, error)
}

// Payloads builds the data of agent events (API.md §9): what an agent needs to act without a second
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

// EventRef is an agent event whose data is to be built: about alert Alert, or about case Case (with
// Alert set too for case.alert_added), or about neither (its facts are its data).
type EventRef struct {
	Alert *uuid.UUID
	Case  *uuid.UUID
	Facts json.RawMessage
}

// EventData is the data of one event and its targeting subject (what the agents' filters are matched
// against); Found is false when its alert or case is gone (nothing to tell).
type EventData struct {
	Data    any
	Subject targeting.Subject
	Found   bool
}

// EventsData builds the data of each event of es, in order. The alerts of the batch are read once
// for all (their rows, then their details: a few statements whatever their number), the applicable
// workflows once per set of indicator types, each case once.
func (p *Payloads) EventsData(ctx context.Context, es []EventRef) ([]EventData, error) {
	b := &payloadBatch{Payloads: p, workflows: map[string][]store.Workflow{}, cases: map[uuid.UUID]caseRead{}}
	var ids []uuid.UUID
	for _, e := range es {
		if e.Alert != nil {
			ids = append(ids, *e.Alert)
		}
	}
	if len(ids) > 0 {
		alerts, err := p.store.GetAlerts(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("alert events data: %w", err)
		}
		if b.details, err = p.store.AlertDetails(ctx, slices.Collect(maps.Values(alerts))); err != nil {
			return nil, fmt.Errorf("alert events data: %w", err)
		}
	}
	out := make([]EventData, len(es))
	for i, e := range es {
		var err error
		switch {
		case e.Case != nil:
			out[i], err = b.caseEventData(ctx, *e.Case, e.Alert, e.Facts)
		case e.Alert != nil:
			out[i].Data, out[i].Subject, out[i].Found, err = b.alertEventData(ctx, *e.Alert, e.Facts)
		default:
			out[i] = EventData{Data: e.Facts, Found: true}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// payloadBatch is what one EventsData call has read.
type payloadBatch struct {
	*Payloads
	details   map[uuid.UUID]store.AlertDetail // the batch's alerts; one gone is absent
	workflows map[string][]store.Workflow     // by the indicator types, joined
	cases     map[uuid.UUID]caseRead
}

type caseRead struct {
	c     store.Case
	inds  []store.CaseIndicatorRow
	found bool
}

// alertEventData is the data of an event about alert: the alert as it stands (with its computed
// malice, enrichment metadata and raw payload), its indicators (providers' raw responses stripped),
// detection rule, the context documents that apply to it, the active workflows applicable to its
// indicators' types, api_base_url, and the event's facts (what changed) beside them.
func (b *payloadBatch) alertEventData(ctx context.Context, alert uuid.UUID, facts json.RawMessage) (map[string]any, targeting.Subject, bool, error) {
	d, ok := b.details[alert]
	if !ok {
		return nil, targeting.Subject{}, false, nil
	}
	a := d.Alert
	types := map[string]bool{}
	inds := make([]map[string]any, len(d.Indicators))
	for i, ind := range d.Indicators {
		types[ind.Type] = true
		inds[i] = map[string]any{"uuid": ind.UUID, "type": ind.Type, "value": ind.Value, "malice": ind.Malice,
			"malice_source": ind.MaliceSource, "is_enriched": ind.IsEnriched, "enrichment_results": ind.ResultsWithoutRaw(),
			"first_seen": ind.FirstSeen.UTC(), "last_seen": ind.LastSeen.UTC()}
	}
	sorted := slices.Sorted(maps.Keys(types))
	key := strings.Join(sorted, ",")
	wfs, read := b.workflows[key]
	if !read {
		var err error
		if wfs, err = b.store.ApplicableWorkflows(ctx, sorted); err != nil {
			return nil, targeting.Subject{}, false, fmt.Errorf("alert event data: %w", err)
		}
		b.workflows[key] = wfs
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
	data["api_base_url"] = b.apiBaseURL
	return data, store.SubjectFor(a.SourceName, a.Severity, a.Title, a.Tags, d.DetectionRule), true, nil
}

// caseEventData is the data of an event about case id (case.created, case.updated,
// case.alert_added): the case as it stands (its severity, malice, alert count and distinct
// indicators), api_base_url and the event's facts; for case.alert_added (alert set) also the alert
// that joined, as alert events carry it. The subject is the alert's for case.alert_added, else the
// case's (its severity, title and tags; no source, so an agent filtered on sources hears only of
// alerts joining cases).
func (b *payloadBatch) caseEventData(ctx context.Context, id uuid.UUID, alert *uuid.UUID, facts json.RawMessage) (EventData, error) {
	r, read := b.cases[id]
	if !read {
		c, err := b.store.GetCase(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return EventData{}, fmt.Errorf("case event data: %w", err)
		default:
			r = caseRead{c: c, found: true}
			if r.inds, err = b.store.CaseIndicators(ctx, id); err != nil {
				return EventData{}, fmt.Errorf("case event data: %w", err)
			}
		}
		b.cases[id] = r
	}
	if !r.found {
		return EventData{}, nil
	}
	data := map[string]any{}
	subject := store.SubjectFor("", r.c.EffectiveSeverity, r.c.Title, r.c.Tags, nil)
	if alert != nil {
		var found bool
		var err error
		if data, subject, found, err = b.alertEventData(ctx, *alert, facts); err != nil || !found {
			return EventData{}, err
		}
	} else if len(facts) > 0 {
		if err := json.Unmarshal(facts, &data); err != nil {
			return EventData{}, fmt.Errorf("case event facts: %w", err)
		}
	}
	data["case"] = CaseData(r.c, r.inds)
	data["api_base_url"] = b.apiBaseURL
	return EventData{Data: data, Subject: subject, Found: true}, nil
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
		"tags": a.Tags, "malice": a.EffectiveMalice, "case_uuid": a.CaseUUID, "malice_override": a.MaliceOverride, "malice_override_source": a.MaliceOverrideSource,
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
