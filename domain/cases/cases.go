// Package cases owns the rules of cases (API.md §14): what a valid case is, its status graph
// (Open→Investigating→Closed, Closed→Open), that Closed needs a close classification, closing a
// case's alerts with it (each through the alert rules, domain/alerts), that an alert belongs to at
// most one case (ALERT_IN_OTHER_CASE unless the request moves it: DecideJoin) and the pipeline's
// grouping (Grouping: which verdicts group, the window, the oldest open case, the creator's
// allowed_sources). Each is decided here inside the store's locked callback, as alerts and approvals
// are: the store locks the rows and runs its lookups (store.JoinFunc for joins by hand,
// store.GroupFunc for the grouping, store.PatchCase's decide for a change), this package decides,
// the store writes what it decided. REST, MCP and the console call Service; the pipeline's finish
// activity calls Grouping.FinishEnrichment. None of them decides any of this.
//
// Inputs are validated here in full (enums, bounds, hostile characters), whatever a front door
// checked before; validation errors are validate.Errors with locations relative to the input (the
// REST adapter prefixes "body").
package cases

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Bounds of a case (API.md §14).
const (
	MaxTitleLength       = 500   // characters
	MaxDescriptionLength = 50000 // characters
	// MaxAlerts is the most alerts one create or add request may name.
	MaxAlerts = alerts.MaxBulkAlerts
)

// Store is what the case rules read and write (implemented by *store.Store).
type Store interface {
	CreateCase(ctx context.Context, in store.CaseCreate) error
	GetCase(ctx context.Context, id uuid.UUID) (store.Case, error)
	CaseExists(ctx context.Context, id uuid.UUID) error
	ListCases(ctx context.Context, f store.CaseFilter) ([]store.Case, int, error)
	PatchCase(ctx context.Context, id uuid.UUID, decide func(c *store.Case, now time.Time) (store.CaseChange, error)) (store.Case, error)
	AddAlertsToCase(ctx context.Context, id uuid.UUID, alerts []uuid.UUID, join store.JoinFunc, actor store.Actor) (store.CaseAdded, error)
	RemoveAlertFromCase(ctx context.Context, id, alertID uuid.UUID, actor store.Actor) error
	DeleteCase(ctx context.Context, id uuid.UUID, actor store.Actor) error
	CaseAlertIDs(ctx context.Context, id uuid.UUID, openOnly bool) ([]uuid.UUID, error)
	CaseIndicators(ctx context.Context, id uuid.UUID) ([]store.CaseIndicatorRow, error)
	CaseAlertSources(ctx context.Context, id uuid.UUID) ([]string, error)
}

// WriteScopes are what every case write needs, at every door (REST, MCP, console): a case write
// answers with the case's alerts and indicators, and closing a case closes its alerts, so writing
// cases is analyst work that needs reading alerts too (security review round 4, R4-3: an ingest-only
// alerts:write key made cases, read other sources' alerts through them and closed them).
var WriteScopes = []string{auth.ScopeAlertsRead, auth.ScopeAlertsWrite}

// mayChange refuses an actor limited by allowed_sources a change of case id unless every alert of
// the case is of its sources (*store.SourceNotAllowedError): a case is worked as a whole (its close
// closes them all). The alerts an actor adds or removes are checked on their locked rows by the store.
func (s *Service) mayChange(ctx context.Context, id uuid.UUID, actor store.Actor) error {
	if actor.AllowedSources == nil {
		return nil
	}
	sources, err := s.store.CaseAlertSources(ctx, id)
	if err != nil {
		return err
	}
	return actor.CheckSources(sources)
}

// AlertRules is the alert rule owner close_alerts closes each alert through (*alerts.Service).
type AlertRules interface {
	Bulk(ctx context.Context, ids []uuid.UUID, p alerts.Patch, actor store.Actor) (alerts.Bulked, error)
}

// Service applies the case rules against a Store.
type Service struct {
	store  Store
	alerts AlertRules
	log    *slog.Logger
}

// New returns a Service over st that closes alerts through al.
func New(st Store, al AlertRules, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: st, alerts: al, log: log}
}

// Transitions returns the statuses a case in status from may move to (API.md §14):
// Open→Investigating, Investigating→Closed, Closed→Open. An unknown status has none.
func Transitions(from string) []string {
	switch from {
	case store.CaseOpen:
		return []string{store.CaseInvestigating}
	case store.CaseInvestigating:
		return []string{store.CaseClosed}
	case store.CaseClosed:
		return []string{store.CaseOpen}
	}
	return nil
}

// TransitionSummary is the graph as text for the doors' descriptions:
// "Open→Investigating, Investigating→Closed, Closed→Open".
func TransitionSummary() string {
	var moves []string
	for _, from := range store.CaseStatuses() {
		if to := Transitions(from); len(to) > 0 {
			moves = append(moves, from+"→"+strings.Join(to, "|"))
		}
	}
	return strings.Join(moves, ", ")
}

// Create is a new case.
type Create struct {
	Title       string
	Description *string
	Severity    *string // nil: derived from its alerts
	Assignee    *string
	Tags        []string
	AlertUUIDs  []uuid.UUID
	// Move lets alerts of other cases leave them for the new one (else ALERT_IN_OTHER_CASE).
	Move bool
}

// Validate checks c; locations are the field names.
func (c Create) Validate() validate.Errors {
	var errs validate.Errors
	errs = append(errs, validateTitle("title", c.Title)...)
	if c.Description != nil {
		errs = append(errs, validateDescription("description", *c.Description)...)
	}
	errs = append(errs, enum("severity", c.Severity, severity.Names())...)
	if c.Assignee != nil {
		errs = append(errs, alerts.ValidateAssignee("assignee", *c.Assignee)...)
	}
	errs = append(errs, alerts.ValidateTags("tags", c.Tags)...)
	if len(c.AlertUUIDs) > 0 {
		errs = append(errs, ValidateAlertList("alert_uuids", c.AlertUUIDs)...)
	}
	return errs
}

// ValidateAlertList checks the alerts of a create or add request: 1..MaxAlerts distinct uuids.
func ValidateAlertList(loc string, ids []uuid.UUID) validate.Errors {
	var errs validate.Errors
	switch n := len(ids); {
	case n == 0:
		errs.AddCtx([]any{loc}, validate.TypeTooShort, "List should have at least 1 item.", nil, map[string]any{"min_length": 1})
	case n > MaxAlerts:
		errs.AddCtx([]any{loc}, validate.TypeTooLong, fmt.Sprintf("List should have at most %d items.", MaxAlerts), nil,
			map[string]any{"max_length": MaxAlerts})
	}
	seen := make(map[uuid.UUID]int, len(ids))
	for i, id := range ids {
		if id == uuid.Nil {
			errs.Add([]any{loc, i}, validate.TypeUUID, "The nil uuid names no alert.", id.String())
			continue
		}
		if j, dup := seen[id]; dup {
			errs.AddCtx([]any{loc, i}, validate.TypeValue, "Repeated alert uuid.", id.String(), map[string]any{"first_index": j})
			continue
		}
		seen[id] = i
	}
	return errs
}

func validateTitle(loc, v string) validate.Errors {
	var errs validate.Errors
	if msg := validate.HostileText(v); msg != "" {
		errs.Add([]any{loc}, validate.TypeValue, msg, nil)
		return errs
	}
	switch n := len([]rune(v)); {
	case strings.TrimSpace(v) == "":
		errs.AddCtx([]any{loc}, validate.TypeStringTooShort, "A title must say something.", v, map[string]any{"min_length": 1})
	case n > MaxTitleLength:
		errs.AddCtx([]any{loc}, validate.TypeStringTooLong, fmt.Sprintf("String should have at most %d character(s).", MaxTitleLength),
			validate.Truncate(v), map[string]any{"max_length": MaxTitleLength})
	}
	return errs
}

func validateDescription(loc, v string) validate.Errors {
	var errs validate.Errors
	if msg := validate.HostileText(v); msg != "" {
		errs.Add([]any{loc}, validate.TypeValue, msg, nil)
		return errs
	}
	if n := len([]rune(v)); n > MaxDescriptionLength {
		errs.AddCtx([]any{loc}, validate.TypeStringTooLong, fmt.Sprintf("String should have at most %d character(s).", MaxDescriptionLength),
			validate.Truncate(v), map[string]any{"max_length": MaxDescriptionLength})
	}
	return errs
}

func enum(loc string, v *string, allowed []string) validate.Errors {
	var errs validate.Errors
	if v != nil && !slices.Contains(allowed, *v) {
		errs.AddCtx([]any{loc}, validate.TypeEnum, "Input should be one of: "+strings.Join(allowed, ", ")+".", *v,
			map[string]any{"expected": allowed})
	}
	return errs
}

// Create makes a case as actor, its alerts joined at once (all or none: a missing alert is
// store.ErrNotFound, an alert of another case without Move is *AlertInOtherCaseError: DecideJoin).
func (s *Service) Create(ctx context.Context, in Create, actor store.Actor) (store.Case, error) {
	if errs := in.Validate(); len(errs) > 0 {
		return store.Case{}, errs
	}
	// The creator's sources bound what the grouping may add to the case later.
	c := store.Case{Title: strings.TrimSpace(in.Title), Severity: in.Severity, Status: store.CaseOpen, Tags: alerts.CleanTags(in.Tags),
		CreatorAllowedSources: actor.AllowedSources}
	if in.Description != nil && *in.Description != "" {
		d := *in.Description
		c.Description = &d
	}
	if in.Assignee != nil {
		if t := strings.TrimSpace(*in.Assignee); t != "" {
			c.Assignee = &t // assigned_at: the store's clock
		}
	}
	if err := s.store.CreateCase(ctx, store.CaseCreate{Case: &c, Alerts: in.AlertUUIDs, Join: DecideJoin(in.Move, actor), Actor: actor}); err != nil {
		return store.Case{}, fmt.Errorf("create case: %w", err)
	}
	return c, nil
}

// Detail is a case with what its page shows beside the record: its distinct indicators.
type Detail struct {
	Case       store.Case
	Indicators []store.CaseIndicatorRow
}

// Get returns case id with its indicators (store.ErrNotFound when it is not there).
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Detail, error) {
	c, err := s.store.GetCase(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	inds, err := s.store.CaseIndicators(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	return Detail{Case: c, Indicators: inds}, nil
}

// Exists reports store.ErrNotFound for a case that is not there.
func (s *Service) Exists(ctx context.Context, id uuid.UUID) error { return s.store.CaseExists(ctx, id) }

// Filter narrows List (the doors validate enums and pages; List checks them again).
type Filter = store.CaseFilter

// ValidateFilter checks a list filter's enums and sort field; locations are the parameter names.
func ValidateFilter(f Filter) validate.Errors {
	var errs validate.Errors
	for _, st := range f.Statuses {
		errs = append(errs, enum("status", &st, store.CaseStatuses())...)
	}
	for _, sv := range f.Severities {
		errs = append(errs, enum("severity", &sv, severity.Names())...)
	}
	if f.SortBy != "" {
		errs = append(errs, enum("sort_by", &f.SortBy, store.CaseSortFields())...)
	}
	if f.Query != "" {
		if msg := validate.HostileText(f.Query); msg != "" {
			errs.Add([]any{"q"}, validate.TypeValue, msg, nil)
		}
	}
	return errs
}

// List returns one page of cases and their total.
func (s *Service) List(ctx context.Context, f Filter) ([]store.Case, int, error) {
	if errs := ValidateFilter(f); len(errs) > 0 {
		return nil, 0, errs
	}
	return s.store.ListCases(ctx, f)
}

// AddAlerts joins alerts to case id (all or none, DecideJoin on their locked rows), moving alerts of
// other cases when move; it returns the case after and the alerts that joined (an alert already in the case is no change).
func (s *Service) AddAlerts(ctx context.Context, id uuid.UUID, ids []uuid.UUID, move bool, actor store.Actor) (store.CaseAdded, error) {
	if errs := ValidateAlertList("alert_uuids", ids); len(errs) > 0 {
		return store.CaseAdded{}, errs
	}
	if err := s.mayChange(ctx, id, actor); err != nil {
		return store.CaseAdded{}, fmt.Errorf("add alerts to case %s: %w", id, err)
	}
	out, err := s.store.AddAlertsToCase(ctx, id, ids, DecideJoin(move, actor), actor)
	if err != nil {
		return store.CaseAdded{}, fmt.Errorf("add alerts to case %s: %w", id, err)
	}
	return out, nil
}

// RemoveAlert takes alert alertID out of case id (store.ErrNotFound when it is not in it).
func (s *Service) RemoveAlert(ctx context.Context, id, alertID uuid.UUID, actor store.Actor) error {
	if err := s.store.CaseExists(ctx, id); err != nil {
		return err
	}
	if err := s.mayChange(ctx, id, actor); err != nil {
		return fmt.Errorf("remove alert %s from case %s: %w", alertID, id, err)
	}
	if err := s.store.RemoveAlertFromCase(ctx, id, alertID, actor); err != nil {
		return fmt.Errorf("remove alert %s from case %s: %w", alertID, id, err)
	}
	return nil
}

// Delete removes case id; its alerts stay, outside any case.
func (s *Service) Delete(ctx context.Context, id uuid.UUID, actor store.Actor) error {
	if err := s.store.DeleteCase(ctx, id, actor); err != nil {
		return fmt.Errorf("delete case %s: %w", id, err)
	}
	return nil
}

// AlertIDs lists the uuids of case id's alerts (store.ErrNotFound for a missing case).
func (s *Service) AlertIDs(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
	if err := s.store.CaseExists(ctx, id); err != nil {
		return nil, err
	}
	return s.store.CaseAlertIDs(ctx, id, false)
}
