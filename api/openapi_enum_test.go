package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/store"
)

// TestOpenAPIEnumsEqualTheirOwners: every enum of the document that is one of the shared vocabularies
// (recognised by a value only it has) is exactly the owner's list, so a struct tag that repeats a list
// instead of naming it ($indicator_type, ...) and drifts fails here.
func TestOpenAPIEnumsEqualTheirOwners(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	var doc any
	require.NoError(t, json.Unmarshal(r.Body, &doc))

	owners := []struct {
		marker string
		want   []string
		min    int // enums the API has today: a tag that stops declaring one is caught too
	}{
		{"hash_md5", indicators.TypeNames(), 14},
		{"Suspicious", indicators.MaliceNames(), 8},
		{"Informational", severity.Names(), 8},
		{"mcp", store.ActorTypes(), 1}, // the activity trail's actor_type: console included (docs/API.md)
	}
	counts := make([]int, len(owners))
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["enum"].([]any); ok {
				vals := make([]string, len(e))
				for i, s := range e {
					vals[i], _ = s.(string)
				}
				for i, o := range owners {
					if slices.Contains(vals, o.marker) {
						require.Equal(t, o.want, vals)
						counts[i]++
					}
				}
			}
			for _, item := range x {
				walk(item)
			}
		case []any:
			for _, item := range x {
				walk(item)
			}
		}
	}
	walk(doc)
	for i, o := range owners {
		require.GreaterOrEqual(t, counts[i], o.min, "enums of %s", o.marker)
	}
	require.Equal(t, []string{"ip", "domain", "hash_md5", "hash_sha1", "hash_sha256", "url", "email", "account"}, indicators.TypeNames())
}
