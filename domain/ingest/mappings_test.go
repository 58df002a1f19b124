package ingest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/store"
)

func TestMappingRules(t *testing.T) {
	require.Empty(t, ingest.ValidateMapping("Entities.*.Address", "ip", "normalized", nil))
	nul := "a\x00b"
	errs := ingest.ValidateMapping("a\x00", "ip", "raw_payload", &nul)
	var locs []string
	for _, e := range errs {
		b, _ := json.Marshal(e.Loc)
		locs = append(locs, string(b))
	}
	require.Contains(t, locs, `["field_path"]`)
	require.Contains(t, locs, `["description"]`)

	system := store.IndicatorMapping{IsSystem: true}
	require.NoError(t, ingest.CheckMappingChange(system, []string{"description", "is_active"}))
	err := ingest.CheckMappingChange(system, []string{"source_name", "indicator_type", "description"})
	var sm *ingest.SystemMappingError
	require.ErrorAs(t, err, &sm)
	require.Equal(t, []string{"source_name", "indicator_type"}, sm.Fields)
	require.NoError(t, ingest.CheckMappingChange(store.IndicatorMapping{}, []string{"field_path"}))

	require.ErrorAs(t, ingest.CheckMappingChange(system, []string{"delete"}), &sm)
	require.Equal(t, []string{"delete"}, sm.Fields)
	require.NoError(t, ingest.CheckMappingChange(store.IndicatorMapping{}, []string{"delete"}))
}
