package cases

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Patch is a case update. A nil field leaves the case's value unchanged.
type Patch struct {
	Title       *string
	Description *string // "" clears it
	Severity    *string
	// ResetSeverity clears the severity set by hand: the case's severity is derived from its alerts
	// again. It cannot be combined with Severity.
	ResetSeverity       bool
	Status              *string
	CloseClassification *string
	Assignee            *string // "" unassigns
	Tags                *[]string
	// CloseAlerts, with a move to Closed, closes every alert of the case that is not Closed with the
	// same classification, each through the alert rules in its own transaction.
	CloseAlerts bool
}

// Validate checks the rules that do not need the stored case. Locations are the field names.
func (p Patch) Validate() validate.Errors {
	var errs validate.Errors
	if p.Title != nil {
		errs = append(errs, validateTitle("title", *p.Title)...)
	}
	if p.Description != nil {
		errs = append(errs, validateDescription("description", *p.Description)...)
	}
	errs = append(errs, enum("severity", p.Severity, severity.Names())...)
	errs = append(errs, enum("status", p.Status, store.CaseStatuses())...)
	errs = append(errs, enum("close_classification", p.CloseClassification, store.CloseClassifications())...)
	if p.Assignee != nil {
		errs = append(errs, alerts.ValidateAssignee("assignee", *p.Assignee)...)
	}
	if p.Tags != nil {
		errs = append(errs, alerts.ValidateTags("tags", *p.Tags)...)
	}
	if len(errs) > 0 {
		return errs
	}
	if p.ResetSeverity && p.Severity != nil {
		errs.Add([]any{"reset_severity"}, validate.TypeValue, "reset_severity cannot be combined with severity.", true)
	}
	if p.Status != nil && *p.Status == store.CaseClosed && p.CloseClassification == nil {
		errs.Add([]any{"close_classification"}, validate.TypeMissing, "close_classification is required when status is Closed.", nil)
	}
	if p.CloseAlerts && (p.Status == nil || *p.Status != store.CaseClosed) {
		errs.Add([]any{"close_alerts"}, validate.TypeValue, "close_alerts goes with status Closed in the same request.", true)
	}
	return errs
}

// Patched is what a patch did: the case as it stands and, when it closed the case's alerts, each
// alert's outcome (nil otherwise).
type Patched struct {
	Case         store.Case
	ClosedAlerts *alerts.Bulked
}

// Patch applies p to case id as actor: the case is locked, Decide computes the change, and its
// columns, activity events and case.updated commit in one transaction. Then, with CloseAlerts, every
// alert of the case that is not Closed is closed through the alert rules (alerts.Service.Bulk: one
// transaction and one alert_closed event per alert); one alert refused does not undo the case's
// close or the other alerts' (each outcome is reported).
func (s *Service) Patch(ctx context.Context, id uuid.UUID, p Patch, actor store.Actor) (Patched, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return Patched{}, errs
	}
	if err := s.mayChange(ctx, id, actor); err != nil {
		return Patched{}, fmt.Errorf("patch case %s: %w", id, err)
	}
	c, err := s.store.PatchCase(ctx, id, func(c *store.Case, now time.Time) (store.CaseChange, error) {
		return Decide(p, actor, c, now)
	})
	if err != nil {
		return Patched{}, fmt.Errorf("patch case %s: %w", id, err)
	}
	out := Patched{Case: c}
	if p.CloseAlerts {
		closed, err := s.closeAlerts(ctx, id, *p.CloseClassification, actor)
		if err != nil {
			return out, err
		}
		out.ClosedAlerts = &closed
		// The alerts' closes may have moved the case's maintained columns: answer the case as it is.
		if c, err := s.store.GetCase(ctx, id); err == nil {
			out.Case = c
		}
	}
	return out, nil
}

// closeAlerts closes the open alerts of case id with classification, MaxAlerts at a time.
func (s *Service) closeAlerts(ctx context.Context, id uuid.UUID, classification string, actor store.Actor) (alerts.Bulked, error) {
	ids, err := s.store.CaseAlertIDs(ctx, id, true)
	if err != nil {
		return alerts.Bulked{}, fmt.Errorf("close the alerts of case %s: %w", id, err)
	}
	status := store.StatusClosed
	patch := alerts.Patch{Status: &status, CloseClassification: &classification}
	out := alerts.Bulked{Items: []alerts.BulkItem{}}
	for chunk := range slices.Chunk(ids, MaxAlerts) {
		b, err := s.alerts.Bulk(ctx, chunk, patch, actor)
		if err != nil {
			return out, fmt.Errorf("close the alerts of case %s: %w", id, err)
		}
		out.Items = append(out.Items, b.Items...)
		out.Succeeded += b.Succeeded
		out.Failed += b.Failed
	}
	return out, nil
}

// Decide applies p (already validated) to c, the locked case, at now and returns the change: the
// columns written, the activity events (each by actor) and the facts of case.updated. It refuses a
// move outside the status graph and a close_classification on a case that is not, and does not
// become, Closed. closed_at and close_classification are set on each close and cleared on reopen; a
// new close_classification on a Closed case reclassifies it.
func Decide(p Patch, actor store.Actor, c *store.Case, now time.Time) (store.CaseChange, error) {
	var ch store.CaseChange
	event := func(typ string, refs map[string]any) {
		ch.Events = append(ch.Events, actor.Event(typ, refs))
	}
	from := c.Status
	to := from
	if p.Status != nil {
		to = *p.Status
	}
	if err := alerts.CheckMove("a", "case", Transitions, store.CaseClosed, from, to, p.CloseClassification); err != nil {
		return ch, err
	}
	if to != from {
		c.Status = to
		ch.Columns = append(ch.Columns, "status")
		refs := map[string]any{"from": from, "to": to}
		switch {
		case to == store.CaseClosed:
			c.ClosedAt, c.CloseClassification = &now, p.CloseClassification
			ch.Columns = append(ch.Columns, "closed_at", "close_classification")
			refs["close_classification"] = *p.CloseClassification
			refs["close_alerts"] = p.CloseAlerts
			event(store.EventCaseClosed, refs)
		case from == store.CaseClosed:
			refs["previous_close_classification"] = strOr(c.CloseClassification)
			c.ClosedAt, c.CloseClassification = nil, nil
			ch.Columns = append(ch.Columns, "closed_at", "close_classification")
			event(store.EventCaseReopened, refs)
		default:
			event(store.EventCaseStatusUpdated, refs)
		}
	} else if p.CloseClassification != nil && !equalPtr(c.CloseClassification, p.CloseClassification) {
		event(store.EventCaseStatusUpdated, map[string]any{"from": from, "to": to,
			"close_classification": map[string]any{"from": strOr(c.CloseClassification), "to": *p.CloseClassification}})
		c.CloseClassification = p.CloseClassification
		ch.Columns = append(ch.Columns, "close_classification")
	}
	switch {
	case p.Severity != nil && !equalPtr(c.Severity, p.Severity):
		event(store.EventCaseSeverityUpdated, map[string]any{"from": strOr(c.Severity), "to": *p.Severity})
		c.Severity = p.Severity
		ch.Columns = append(ch.Columns, "severity")
	case p.ResetSeverity && c.Severity != nil:
		event(store.EventCaseSeverityUpdated, map[string]any{"from": *c.Severity, "to": nil, "reset": true})
		c.Severity = nil
		ch.Columns = append(ch.Columns, "severity")
	}
	var edited []string
	if p.Title != nil {
		if t := strings.TrimSpace(*p.Title); t != c.Title {
			edited = append(edited, "title")
			c.Title = t
			ch.Columns = append(ch.Columns, "title")
		}
	}
	if p.Description != nil {
		var d *string
		if *p.Description != "" {
			d = p.Description
		}
		if !equalPtr(c.Description, d) {
			edited = append(edited, "description")
			c.Description = d
			ch.Columns = append(ch.Columns, "description")
		}
	}
	if p.Tags != nil {
		if tags := alerts.CleanTags(*p.Tags); !slices.Equal(tags, c.Tags) {
			edited = append(edited, "tags")
			c.Tags = tags
			ch.Columns = append(ch.Columns, "tags")
		}
	}
	if len(edited) > 0 {
		event(store.EventCaseUpdated, map[string]any{"fields": edited})
	}
	if p.Assignee != nil {
		if refs, ok := alerts.Reassign(&c.Assignee, &c.AssignedAt, *p.Assignee, now); ok {
			event(store.EventCaseAssigned, refs)
			ch.Columns = append(ch.Columns, "assignee", "assigned_at")
		}
	}
	if len(ch.Events) > 0 {
		changes := make([]map[string]any, len(ch.Events))
		for i, e := range ch.Events {
			changes[i] = map[string]any{"change": e.EventType, "details": e.References}
		}
		ch.Updated = map[string]any{"changes": changes,
			"actor": map[string]any{"type": actor.Type, "key_prefix": actor.KeyPrefixPtr(), "agent": actor.Agent}}
	}
	return ch, nil
}

func equalPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func strOr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
