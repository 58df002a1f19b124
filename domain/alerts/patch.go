package alerts

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Tag limits of a PATCH (API.md §3).
const (
	MaxTags      = 50
	MaxTagLength = 100 // characters
)

// MaxAssigneeLength is the longest assignee handle, in characters (API.md §13).
const MaxAssigneeLength = 200

// Unassigned is the assignee filter value for "no assignee" (GET /v1/alerts?assignee=none), which
// is why no one may be assigned the handle "none" (in any case).
const Unassigned = "none"

// Malice override sources: who set an alert's malice_override.
const (
	OverrideByAnalyst = "analyst"
	OverrideByAgent   = "agent"
)

// Patch is an alert update. A nil field leaves the alert's value unchanged; Tags nil leaves the tags,
// a non-nil Tags replaces them (blank and repeated tags are dropped).
type Patch struct {
	Status              *string
	Severity            *string
	CloseClassification *string
	Tags                *[]string
	MaliceOverride      *string
	ResetMaliceOverride bool
	// Assignee nil leaves the assignee; "" unassigns; a handle (trimmed) assigns (API.md §13).
	Assignee *string
	// TagsAdd and TagsRemove edit the tags (bulk changes, API.md §13): applied after Tags, adding
	// the tags the alert lacks (at the end) and removing the others named.
	TagsAdd, TagsRemove []string
}

// Validate checks the rules that do not need the stored alert. Locations are the field names.
func (p Patch) Validate() validate.Errors {
	var errs validate.Errors
	enum := func(loc string, v *string, allowed []string) {
		if v != nil && !slices.Contains(allowed, *v) {
			errs.AddCtx([]any{loc}, validate.TypeEnum, "Input should be one of: "+strings.Join(allowed, ", ")+".", *v,
				map[string]any{"expected": allowed})
		}
	}
	enum("status", p.Status, store.AlertStatuses())
	enum("severity", p.Severity, severity.Names())
	enum("close_classification", p.CloseClassification, store.CloseClassifications())
	enum("malice_override", p.MaliceOverride, indicators.MaliceNames())
	if len(errs) > 0 {
		return errs
	}
	if p.Status != nil && *p.Status == store.StatusClosed && p.CloseClassification == nil {
		errs.Add([]any{"close_classification"}, validate.TypeMissing, "close_classification is required when status is Closed.", nil)
	}
	if p.ResetMaliceOverride && p.MaliceOverride != nil {
		errs.Add([]any{"reset_malice_override"}, validate.TypeValue, "reset_malice_override cannot be combined with malice_override.", true)
	}
	if p.Tags != nil {
		errs = append(errs, ValidateTags("tags", *p.Tags)...)
	}
	errs = append(errs, ValidateTags("tags_add", p.TagsAdd)...)
	errs = append(errs, ValidateTags("tags_remove", p.TagsRemove)...)
	if p.Assignee != nil {
		errs = append(errs, ValidateAssignee("assignee", *p.Assignee)...)
	}
	return errs
}

// ValidateTags checks a tag list as PATCH takes it (alerts and cases alike): at most MaxTags tags,
// each not blank, without NUL, at most MaxTagLength characters. Locations are [loc] and [loc, i].
func ValidateTags(loc string, tags []string) validate.Errors {
	var errs validate.Errors
	if n := len(tags); n > MaxTags {
		errs.AddCtx([]any{loc}, validate.TypeTooLong, "List should have at most 50 item(s).", nil, map[string]any{"max_length": MaxTags})
	}
	for i, t := range tags {
		if strings.TrimSpace(t) == "" {
			errs.Add([]any{loc, i}, validate.TypeStringTooShort, "Tags must not be blank.", t)
		}
		if strings.IndexByte(t, 0) >= 0 {
			errs.Add([]any{loc, i}, validate.TypeValue, "NUL characters are not accepted.", nil)
		}
		if n := len([]rune(t)); n > MaxTagLength {
			errs.AddCtx([]any{loc, i}, validate.TypeStringTooLong, "String should have at most 100 character(s).",
				validate.Truncate(t), map[string]any{"max_length": MaxTagLength})
		}
	}
	return errs
}

// ValidateAssignee checks an assignee handle as PATCH takes it: "" (unassign) or 1..200 characters
// once trimmed, without control characters (NUL included), and not the filter word "none".
func ValidateAssignee(loc string, v string) validate.Errors {
	var errs validate.Errors
	t := strings.TrimSpace(v)
	switch {
	case v == "":
	case t == "":
		errs.Add([]any{loc}, validate.TypeStringTooShort, "An assignee must not be blank; send \"\" to unassign.", v)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		errs.Add([]any{loc}, validate.TypeValue, "Control characters (NUL included) are not accepted.", nil)
	case len([]rune(t)) > MaxAssigneeLength:
		errs.AddCtx([]any{loc}, validate.TypeStringTooLong, "String should have at most 200 character(s).",
			validate.Truncate(v), map[string]any{"max_length": MaxAssigneeLength})
	case !utf8.ValidString(v):
		errs.Add([]any{loc}, validate.TypeValue, "Invalid UTF-8.", nil)
	case strings.EqualFold(t, Unassigned):
		errs.Add([]any{loc}, validate.TypeValue, "\"none\" is reserved (the filter for unassigned alerts).", v)
	}
	return errs
}

// Patch applies p to the alert id as actor: the alert is locked, Decide computes the change, and the
// columns and activity events are written in one transaction. A rule broken by p is validate.Errors
// (relative to p's fields; a refused transition has type "invalid_transition"); a missing alert is
// store.ErrNotFound.
func (s *Service) Patch(ctx context.Context, id uuid.UUID, p Patch, actor store.Actor) (store.Alert, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return store.Alert{}, errs
	}
	return s.store.PatchAlert(ctx, id, func(a *store.Alert, now time.Time) (store.AlertChange, error) {
		return Decide(p, actor, a, now)
	})
}

// Decide applies p (already validated) to a, the locked alert, at now and returns the change: the
// columns written and the activity events, each carrying actor. It refuses a move outside the
// transition graph and a close_classification on an alert that is not, and does not become, Closed.
//
// The rules (API.md §3): acknowledged_at is set on the first move away from Open, triaged_at on the
// first move to Triaging, closed_at and close_classification on each close; reopening clears both. A
// new close_classification on a Closed alert reclassifies it. A malice override records its source,
// agent for agent keys and analyst otherwise; a reset clears override, source and time.
func Decide(p Patch, actor store.Actor, a *store.Alert, now time.Time) (store.AlertChange, error) {
	var ch store.AlertChange
	// allowed_sources bounds the alerts a key changes, by every door and through cases and bulk
	// (security review round 4, R4-3), decided on the locked row.
	if !actor.AllowsSource(a.SourceName) {
		return ch, &store.SourceNotAllowedError{AlertUUID: a.UUID, Source: a.SourceName}
	}
	event := func(typ string, refs map[string]any) {
		ch.Events = append(ch.Events, actor.Event(typ, refs))
	}
	from := a.Status
	to := from
	if p.Status != nil {
		to = *p.Status
	}
	if err := CheckMove("an", "alert", Transitions, store.StatusClosed, from, to, p.CloseClassification); err != nil {
		return ch, err
	}
	if to != from {
		a.Status = to
		ch.Columns = append(ch.Columns, "status")
		if from == store.StatusOpen && a.AcknowledgedAt == nil {
			a.AcknowledgedAt = &now
			ch.Columns = append(ch.Columns, "acknowledged_at")
		}
		if to == store.StatusTriaging && a.TriagedAt == nil {
			a.TriagedAt = &now
			ch.Columns = append(ch.Columns, "triaged_at")
		}
		refs := map[string]any{"from": from, "to": to}
		switch {
		case to == store.StatusClosed:
			a.ClosedAt = &now
			a.CloseClassification = p.CloseClassification
			ch.Columns = append(ch.Columns, "closed_at", "close_classification")
			refs["close_classification"] = *p.CloseClassification
			event("alert_closed", refs)
		case from == store.StatusClosed:
			refs["previous_close_classification"] = strOr(a.CloseClassification)
			a.ClosedAt, a.CloseClassification = nil, nil
			ch.Columns = append(ch.Columns, "closed_at", "close_classification")
			event("alert_reopened", refs)
		default:
			event("alert_status_updated", refs)
		}
	} else if p.CloseClassification != nil && (a.CloseClassification == nil || *a.CloseClassification != *p.CloseClassification) {
		// Reclassifying a closed alert.
		event("alert_status_updated", map[string]any{"from": from, "to": to,
			"close_classification": map[string]any{"from": strOr(a.CloseClassification), "to": *p.CloseClassification}})
		a.CloseClassification = p.CloseClassification
		ch.Columns = append(ch.Columns, "close_classification")
	}
	if p.Severity != nil && *p.Severity != a.Severity {
		event("alert_severity_updated", map[string]any{"from": a.Severity, "to": *p.Severity})
		a.Severity = *p.Severity
		ch.Columns = append(ch.Columns, "severity")
	}
	if p.Tags != nil {
		tags := CleanTags(*p.Tags)
		if !slices.Equal(tags, a.Tags) {
			event("alert_tags_updated", map[string]any{"from": a.Tags, "to": tags})
			a.Tags = tags
			ch.Columns = append(ch.Columns, "tags")
		}
	}
	if p.TagsAdd != nil || p.TagsRemove != nil {
		tags := CleanTags(append(slices.Clone(a.Tags), CleanTags(p.TagsAdd)...))
		tags = slices.DeleteFunc(tags, func(t string) bool { return slices.Contains(CleanTags(p.TagsRemove), t) })
		if !slices.Equal(tags, CleanTags(a.Tags)) {
			if len(tags) > MaxTags {
				var errs validate.Errors
				errs.AddCtx([]any{"tags_add"}, validate.TypeTooLong, "The alert would have more than 50 tags.", nil,
					map[string]any{"max_length": MaxTags, "tags": len(tags)})
				return ch, errs
			}
			event("alert_tags_updated", map[string]any{"from": a.Tags, "to": tags})
			a.Tags = tags
			ch.Columns = append(ch.Columns, "tags")
		}
	}
	if p.Assignee != nil {
		if refs, ok := Reassign(&a.Assignee, &a.AssignedAt, *p.Assignee, now); ok {
			event("alert_assigned", refs)
			ch.Columns = append(ch.Columns, "assignee", "assigned_at")
		}
	}
	switch {
	case p.MaliceOverride != nil:
		src := OverrideByAnalyst
		if actor.Agent {
			src = OverrideByAgent
		}
		if a.MaliceOverride == nil || *a.MaliceOverride != *p.MaliceOverride || a.MaliceOverrideSource == nil || *a.MaliceOverrideSource != src {
			event("alert_malice_updated", map[string]any{"from": strOr(a.MaliceOverride), "to": *p.MaliceOverride, "source": src})
			a.MaliceOverride, a.MaliceOverrideSource, a.MaliceOverrideAt = p.MaliceOverride, &src, &now
			ch.Columns = append(ch.Columns, "malice_override", "malice_override_source", "malice_override_at")
		}
	case p.ResetMaliceOverride && a.MaliceOverride != nil:
		event("alert_malice_updated", map[string]any{"from": *a.MaliceOverride, "to": nil, "reset": true})
		a.MaliceOverride, a.MaliceOverrideSource, a.MaliceOverrideAt = nil, nil, nil
		ch.Columns = append(ch.Columns, "malice_override", "malice_override_source", "malice_override_at")
	}
	ch.Updated = agentFacts(ch.Events, actor)
	return ch, nil
}

// Reassign applies a requested assignee (validated by ValidateAssignee: "" unassigns, a handle is
// trimmed) to an owner and its assigned_at, at now: the one assignment rule of alerts and cases
// (API.md §13, §14). It reports the activity references {from, to} and whether anything changed.
func Reassign(assignee **string, assignedAt **time.Time, requested string, now time.Time) (map[string]any, bool) {
	var to *string
	if t := strings.TrimSpace(requested); t != "" {
		to = &t
	}
	if equalPtr(*assignee, to) {
		return nil, false
	}
	refs := map[string]any{"from": strOr(*assignee), "to": strOr(to)}
	*assignee = to
	if to == nil {
		*assignedAt = nil
	} else {
		*assignedAt = &now
	}
	return refs, true
}

// agentFacts are the facts of the alert.updated event a change raises (API.md §9: a change of
// status, close classification, severity, malice or assignee (§13); tags alone raise none): each change's activity
// event type and references, and who made it. nil when nothing agents hear of changed.
func agentFacts(events []store.ActivityEvent, actor store.Actor) map[string]any {
	var changes []map[string]any
	for _, e := range events {
		if e.EventType == "alert_tags_updated" {
			continue
		}
		changes = append(changes, map[string]any{"change": e.EventType, "details": e.References})
	}
	if len(changes) == 0 {
		return nil
	}
	return map[string]any{"changes": changes, "actor": map[string]any{"type": actor.Type, "key_prefix": actor.KeyPrefixPtr(), "agent": actor.Agent}}
}

// CleanTags trims tags and drops blank and repeated ones, keeping the first occurrence's order.
func CleanTags(in []string) []string {
	out := make([]string, 0, len(in))
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
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
