package cases

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// AlertInOtherCaseError: an alert already belongs to another case and the request did not ask to
// move it (409 ALERT_IN_OTHER_CASE naming it).
type AlertInOtherCaseError struct {
	AlertUUID uuid.UUID
	CaseUUID  uuid.UUID // the case it belongs to
}

func (e *AlertInOtherCaseError) Error() string {
	return fmt.Sprintf("alert %s belongs to case %s", e.AlertUUID, e.CaseUUID)
}

// DecideJoin is the rule of a join by hand (create with alerts, add alerts), decided on the alerts'
// locked rows the store hands it (store.JoinFunc): an actor limited by allowed_sources joins only
// alerts of those sources (*store.SourceNotAllowedError, security review round 4, R4-3), and an
// alert is in at most one case: an alert of another case is *AlertInOtherCaseError unless move,
// when it leaves that case for this one. Every alert joins or, on the first refusal, none; an
// alert already in the case is no change (the store writes nothing for it).
func DecideJoin(move bool, actor store.Actor) store.JoinFunc {
	return func(caseID uuid.UUID, locked []store.JoiningAlert) ([]uuid.UUID, error) {
		for _, a := range locked {
			if !actor.AllowsSource(a.SourceName) {
				return nil, &store.SourceNotAllowedError{AlertUUID: a.UUID, Source: a.SourceName}
			}
		}
		join := make([]uuid.UUID, 0, len(locked))
		for _, a := range locked {
			if a.CaseUUID != nil && *a.CaseUUID != caseID && !move {
				return nil, &AlertInOtherCaseError{AlertUUID: a.UUID, CaseUUID: *a.CaseUUID}
			}
			join = append(join, a.UUID)
		}
		return join, nil
	}
}

// GroupingMalices are the indicator verdicts that group an alert into a case (API.md §14
// "Grouping"), worst first: the grouping names the worst indicator the alert shares with the case.
// Named here only: the store's lookup (case_grouping_match) receives them as an argument.
func GroupingMalices() []string {
	return []string{string(indicators.MaliceMalicious), string(indicators.MaliceSuspicious)}
}

// OpenStatuses are the case statuses the grouping joins (a Closed case is not grouped into).
func OpenStatuses() []string { return []string{store.CaseOpen, store.CaseInvestigating} }

// Grouping is the pipeline's grouping rule (API.md §14 "Grouping"): when an alert's pipeline
// finishes, the alert joins the oldest open case one of whose alerts, seen within Window of the
// finish, shares an indicator whose verdict groups (GroupingMalices) with it. An alert in a case
// already is not moved; a case whose creator was limited by allowed_sources takes no alert of
// another source (the alert then stays outside any case; the next eligible case is not sought:
// security review round 4, R4-3). Window 0 groups nothing.
type Grouping struct {
	Window time.Duration
}

// FinishStore is the store a pipeline's finish writes through (implemented by *store.Store).
type FinishStore interface {
	FinishEnrichment(ctx context.Context, alertID uuid.UUID, status, runID string, failed []string, event store.FinishEvent, group store.GroupFunc) (store.FinishedEnrichment, error)
}

// FinishEnrichment finishes alert alertID's pipeline through st (store.FinishEnrichment: status,
// parking, the finish's event once per run) and groups the alert by g's rule in the same
// transaction: the store locks the alert and runs the lookup, Decide decides.
func (g Grouping) FinishEnrichment(ctx context.Context, st FinishStore, alertID uuid.UUID, status, runID string, failed []string, event store.FinishEvent) (store.FinishedEnrichment, error) {
	var group store.GroupFunc
	if g.Window > 0 {
		group = g.Decide
	}
	return st.FinishEnrichment(ctx, alertID, status, runID, failed, event, group)
}

// Decide is the grouping's decision for alert a (its row locked) at the finish's time now: nil when
// it joins no case, else the match lookup found. An alert in a case already, or with no indicator
// whose verdict groups, costs no lookup.
func (g Grouping) Decide(a store.GroupingAlert, now time.Time, lookup store.GroupingLookupFunc) (*store.GroupingMatch, error) {
	if g.Window <= 0 || a.InCase || !slices.ContainsFunc(a.Malices, func(m string) bool { return slices.Contains(GroupingMalices(), m) }) {
		return nil, nil
	}
	m, err := lookup(store.GroupingLookup{Malices: GroupingMalices(), OpenStatuses: OpenStatuses(), Since: now.Add(-g.Window)})
	if err != nil || m == nil {
		return nil, err
	}
	// The creator's allowed_sources bound the case as they bound its creator (R4-3).
	if !(store.Actor{AllowedSources: m.Case.CreatorAllowedSources}).AllowsSource(a.SourceName) {
		return nil, nil
	}
	return m, nil
}
