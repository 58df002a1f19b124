package alerts_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func ptr[T any](v T) *T { return &v }

var human = store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_hum"}

// The transition graph of API.md §3, written out independently of alerts.Transitions.
var allowed = map[[2]string]bool{
	{"Open", "Triaging"}: true, {"Open", "Escalated"}: true, {"Open", "Closed"}: true,
	{"Triaging", "Escalated"}: true, {"Triaging", "Closed"}: true,
	{"Escalated", "Triaging"}: true, {"Escalated", "Closed"}: true,
	{"Closed", "Open"}: true,
}

// Every from/to pair of statuses: allowed moves change the status and write one event of the right
// type; refused moves are invalid_transition with the allowed list and leave the alert untouched.
func TestDecide_EveryTransition(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, from := range store.AlertStatuses() {
		for _, to := range store.AlertStatuses() {
			t.Run(from+"→"+to, func(t *testing.T) {
				a := &store.Alert{Status: from}
				if from == store.StatusClosed {
					a.ClosedAt, a.CloseClassification = ptr(now.Add(-time.Hour)), ptr("Duplicate")
				}
				before := *a
				p := alerts.Patch{Status: ptr(to)}
				if to == store.StatusClosed {
					p.CloseClassification = ptr("Undetermined")
				}
				require.Empty(t, p.Validate())
				ch, err := alerts.Decide(p, human, a, now)
				switch {
				case from == to:
					require.NoError(t, err)
					if to == store.StatusClosed { // a new classification reclassifies
						require.Equal(t, []string{"close_classification"}, ch.Columns)
						require.Equal(t, "alert_status_updated", ch.Events[0].EventType)
					} else {
						require.Empty(t, ch.Columns)
						require.Empty(t, ch.Events)
					}
					require.Equal(t, alerts.CanTransition(from, to), true)
				case allowed[[2]string{from, to}]:
					require.NoError(t, err)
					require.True(t, alerts.CanTransition(from, to))
					require.Equal(t, to, a.Status)
					require.Contains(t, ch.Columns, "status")
					require.Len(t, ch.Events, 1)
					e := ch.Events[0]
					require.Equal(t, store.ActorAPI, e.ActorType)
					require.Equal(t, "cai_hum", *e.ActorKeyPrefix)
					require.Equal(t, from, e.References["from"])
					require.Equal(t, to, e.References["to"])
					switch {
					case to == store.StatusClosed:
						require.Equal(t, "alert_closed", e.EventType)
						require.Equal(t, now, *a.ClosedAt)
						require.Equal(t, "Undetermined", *a.CloseClassification)
					case from == store.StatusClosed:
						require.Equal(t, "alert_reopened", e.EventType)
						require.Nil(t, a.ClosedAt)
						require.Nil(t, a.CloseClassification)
						require.Equal(t, "Duplicate", e.References["previous_close_classification"])
					default:
						require.Equal(t, "alert_status_updated", e.EventType)
					}
					require.Equal(t, from == store.StatusOpen, a.AcknowledgedAt != nil, "acknowledged_at on leaving Open")
					require.Equal(t, to == store.StatusTriaging, a.TriagedAt != nil, "triaged_at on reaching Triaging")
				default:
					require.False(t, alerts.CanTransition(from, to))
					var errs validate.Errors
					require.True(t, errors.As(err, &errs))
					require.Len(t, errs, 1)
					require.Equal(t, "invalid_transition", errs[0].Type)
					require.Equal(t, []any{"status"}, errs[0].Loc)
					require.Equal(t, alerts.Transitions(from), errs[0].Ctx["allowed"])
					require.Equal(t, before, *a, "a refused move leaves the alert as it was")
				}
			})
		}
	}
	// The graph itself.
	for _, from := range store.AlertStatuses() {
		for _, to := range alerts.Transitions(from) {
			require.True(t, allowed[[2]string{from, to}], "%s→%s", from, to)
		}
	}
	require.Nil(t, alerts.Transitions("Bogus"))
	require.False(t, alerts.CanTransition("Bogus", "Open"))
}

func TestDecide_TimestampsAreSetOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &store.Alert{Status: store.StatusOpen}
	_, err := alerts.Decide(alerts.Patch{Status: ptr("Triaging")}, human, a, t0)
	require.NoError(t, err)
	_, err = alerts.Decide(alerts.Patch{Status: ptr("Escalated")}, human, a, t0.Add(time.Hour))
	require.NoError(t, err)
	ch, err := alerts.Decide(alerts.Patch{Status: ptr("Triaging")}, human, a, t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, t0, *a.AcknowledgedAt)
	require.Equal(t, t0, *a.TriagedAt)
	require.Equal(t, []string{"status"}, ch.Columns)
}

func TestDecide_CloseClassificationOnlyWhenClosed(t *testing.T) {
	a := &store.Alert{Status: store.StatusTriaging}
	_, err := alerts.Decide(alerts.Patch{CloseClassification: ptr("Duplicate")}, human, a, time.Now())
	var errs validate.Errors
	require.True(t, errors.As(err, &errs))
	require.Equal(t, []any{"close_classification"}, errs[0].Loc)
	require.Equal(t, map[string]any{"status": "Triaging"}, errs[0].Ctx)

	// Same classification on a closed alert: nothing to do.
	closed := &store.Alert{Status: store.StatusClosed, CloseClassification: ptr("Duplicate")}
	ch, err := alerts.Decide(alerts.Patch{CloseClassification: ptr("Duplicate")}, human, closed, time.Now())
	require.NoError(t, err)
	require.Empty(t, ch.Events)
}

func TestDecide_MaliceOverrideSourceFollowsKeyType(t *testing.T) {
	now := time.Now()
	agent := store.Actor{Type: store.ActorMCP, KeyPrefix: "cai_agt", Agent: true}
	a := &store.Alert{Status: store.StatusOpen}
	ch, err := alerts.Decide(alerts.Patch{MaliceOverride: ptr("Malicious")}, agent, a, now)
	require.NoError(t, err)
	require.Equal(t, "agent", *a.MaliceOverrideSource)
	require.Equal(t, store.ActorMCP, ch.Events[0].ActorType)
	require.Equal(t, "agent", ch.Events[0].References["source"])

	// The same level by a human changes the source (and is an event); repeating it is not.
	ch, err = alerts.Decide(alerts.Patch{MaliceOverride: ptr("Malicious")}, human, a, now)
	require.NoError(t, err)
	require.Equal(t, "analyst", *a.MaliceOverrideSource)
	require.Len(t, ch.Events, 1)
	ch, err = alerts.Decide(alerts.Patch{MaliceOverride: ptr("Malicious")}, human, a, now)
	require.NoError(t, err)
	require.Empty(t, ch.Events)

	ch, err = alerts.Decide(alerts.Patch{ResetMaliceOverride: true}, human, a, now)
	require.NoError(t, err)
	require.Nil(t, a.MaliceOverride)
	require.Nil(t, a.MaliceOverrideSource)
	require.Nil(t, a.MaliceOverrideAt)
	require.Equal(t, true, ch.Events[0].References["reset"])
	// Resetting without an override is a no-op.
	ch, err = alerts.Decide(alerts.Patch{ResetMaliceOverride: true}, human, a, now)
	require.NoError(t, err)
	require.Empty(t, ch.Events)
}

func TestDecide_TagsAndSeverity(t *testing.T) {
	a := &store.Alert{Status: store.StatusOpen, Severity: "Low", Tags: []string{"x"}}
	system := store.Actor{Type: store.ActorSystem}
	ch, err := alerts.Decide(alerts.Patch{Severity: ptr("High"), Tags: &[]string{" b ", "a", "b", ""}}, system, a, time.Now())
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, a.Tags)
	require.Equal(t, "High", a.Severity)
	require.Equal(t, []string{"severity", "tags"}, ch.Columns)
	require.Nil(t, ch.Events[0].ActorKeyPrefix, "no key, no prefix")
	// An empty list clears the tags.
	_, err = alerts.Decide(alerts.Patch{Tags: &[]string{}}, system, a, time.Now())
	require.NoError(t, err)
	require.Empty(t, a.Tags)
}

func TestPatchValidate_HostileAndMalformed(t *testing.T) {
	long := strings.Repeat("é", 101)
	cases := []struct {
		name string
		p    alerts.Patch
		loc  string
		typ  string
	}{
		{"unknown status", alerts.Patch{Status: ptr("Deleted")}, "status", validate.TypeEnum},
		{"status case", alerts.Patch{Status: ptr("open")}, "status", validate.TypeEnum},
		{"unknown severity", alerts.Patch{Severity: ptr("Severe")}, "severity", validate.TypeEnum},
		{"unknown classification", alerts.Patch{Status: ptr("Closed"), CloseClassification: ptr("Fine")}, "close_classification", validate.TypeEnum},
		{"unknown malice", alerts.Patch{MaliceOverride: ptr("Evil")}, "malice_override", validate.TypeEnum},
		{"closing needs a classification", alerts.Patch{Status: ptr("Closed")}, "close_classification", validate.TypeMissing},
		{"reset with override", alerts.Patch{MaliceOverride: ptr("Benign"), ResetMaliceOverride: true}, "reset_malice_override", validate.TypeValue},
		{"blank tag", alerts.Patch{Tags: &[]string{"  "}}, "tags[0]", validate.TypeStringTooShort},
		{"NUL tag", alerts.Patch{Tags: &[]string{"a\x00b"}}, "tags[0]", validate.TypeValue},
		{"long tag", alerts.Patch{Tags: &[]string{"ok", long}}, "tags[1]", validate.TypeStringTooLong},
		{"too many tags", alerts.Patch{Tags: ptr(slices.Repeat([]string{"t"}, 51))}, "tags", validate.TypeTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.p.Validate()
			require.NotEmpty(t, errs)
			require.Equal(t, tc.loc, validate.LocString(errs[0].Loc))
			require.Equal(t, tc.typ, errs[0].Type)
		})
	}
	require.Empty(t, alerts.Patch{}.Validate())
}
