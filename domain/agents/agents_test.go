package agents_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

func TestMatches(t *testing.T) {
	subject := targeting.Subject{SourceName: "sentinel", Severity: "High", Title: "Impossible travel", Tags: []string{"identity"}}
	base := store.Agent{IsActive: true, Events: []string{agents.EventAlertEnriched}}
	with := func(edit func(*store.Agent)) store.Agent {
		a := base
		edit(&a)
		return a
	}
	cases := []struct {
		name  string
		agent store.Agent
		event string
		want  bool
	}{
		{"subscribed, no filters", base, agents.EventAlertEnriched, true},
		{"not subscribed", base, agents.EventAlertUpdated, false},
		{"inactive", with(func(a *store.Agent) { a.IsActive = false }), agents.EventAlertEnriched, false},
		{"source listed", with(func(a *store.Agent) { a.TriggerOnSources = []string{"elastic", "sentinel"} }), agents.EventAlertEnriched, true},
		{"other source", with(func(a *store.Agent) { a.TriggerOnSources = []string{"elastic"} }), agents.EventAlertEnriched, false},
		{"severity listed", with(func(a *store.Agent) { a.TriggerOnSeverities = []string{"High", "Critical"} }), agents.EventAlertEnriched, true},
		{"other severity", with(func(a *store.Agent) { a.TriggerOnSeverities = []string{"Critical"} }), agents.EventAlertEnriched, false},
		{"filter matches", with(func(a *store.Agent) {
			a.TriggerFilter = json.RawMessage(`{"match_all":[{"field":"severity","op":"gte","value":"Medium"},{"field":"tags","op":"contains","value":"identity"}]}`)
		}), agents.EventAlertEnriched, true},
		{"filter does not match", with(func(a *store.Agent) {
			a.TriggerFilter = json.RawMessage(`{"match_any":[{"field":"title","op":"contains","value":"ransomware"}]}`)
		}), agents.EventAlertEnriched, false},
		{"stored filter that no longer parses matches nothing", with(func(a *store.Agent) {
			a.TriggerFilter = json.RawMessage(`{"match_all":[{"field":"nope","op":"eq","value":"x"}]}`)
		}), agents.EventAlertEnriched, false},
		{"JSON null filter is no filter", with(func(a *store.Agent) { a.TriggerFilter = json.RawMessage(`null`) }), agents.EventAlertEnriched, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, agents.Matches(c.agent, c.event, subject)) })
	}
}
