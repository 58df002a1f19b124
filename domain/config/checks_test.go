package config_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// TestOwnersRefuseWhatTheyCannotStore: the owners apply their validation whatever door calls them
// (the REST binder calls the same checks only to report them with the tags' errors in one 422), so
// a door that forgets to check cannot store a blank name, a NUL or an oversized document.
func TestOwnersRefuseWhatTheyCannotStore(t *testing.T) {
	ctx, actor := context.Background(), store.Actor{Type: store.ActorSystem}
	locs := func(t *testing.T, err error) []string {
		t.Helper()
		var errs validate.Errors
		require.ErrorAs(t, err, &errs)
		var out []string
		for _, e := range errs {
			out = append(out, validate.LocString(e.Loc))
		}
		return out
	}
	nul, bad := "a\x00b", "\xff"
	// The checks come before any store access: nil stores prove no row was read or written.
	_, err := config.NewRules(nil, nil).Create(ctx, actor, config.RuleFields{Name: " \t", SourceName: &nul, DataSources: []string{"ok", bad}})
	require.Equal(t, []string{"name", "source_name", "data_sources[1]"}, locs(t, err))
	_, err = config.NewRules(nil, nil).Update(ctx, actor, [16]byte{}, config.RulePatch{Documentation: optional.Of(nul)})
	require.Equal(t, []string{"documentation"}, locs(t, err))

	_, err = config.NewDocuments(nil, nil).Create(ctx, actor, config.DocumentFields{Title: "\u3000", DocumentType: "sop",
		Content: strings.Repeat("a", config.MaxDocumentBytes+1), Tags: []string{nul}})
	require.Equal(t, []string{"title", "content", "tags[0]"}, locs(t, err))
	big := strings.Repeat("a", config.MaxDocumentBytes)
	_, err = config.NewDocuments(nil, nil).Update(ctx, actor, [16]byte{}, config.DocumentPatch{Content: &bad, Description: optional.Of(nul)})
	require.Equal(t, []string{"description", "content"}, locs(t, err))
	require.Empty(t, config.CheckDocument(config.DocumentFields{Title: "t", Content: big}), "exactly the limit is allowed")

	_, err = config.NewIntegrations(nil, nil, nil, nil, nil).Create(ctx, actor, config.IntegrationFields{SourceName: "generic",
		SeverityMapping: map[string]string{"x": "Apocalyptic"}})
	require.Equal(t, []string{"severity_mapping.x"}, locs(t, err))
	many := map[string]string{}
	for i := range 101 {
		many[strings.Repeat("k", i+1)] = "High"
	}
	_, err = config.NewIntegrations(nil, nil, nil, nil, nil).Update(ctx, actor, [16]byte{}, config.IntegrationPatch{SeverityMapping: many})
	require.Equal(t, []string{"severity_mapping"}, locs(t, err))
}
