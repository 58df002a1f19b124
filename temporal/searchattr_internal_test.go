package temporal

import (
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
)

func TestMissingKeywords(t *testing.T) {
	kw := enumspb.INDEXED_VALUE_TYPE_KEYWORD
	want := []string{"A", "B"}
	tests := []struct {
		name     string
		existing map[string]enumspb.IndexedValueType
		missing  map[string]enumspb.IndexedValueType
		errPart  string
	}{
		{name: "none exist", existing: nil, missing: map[string]enumspb.IndexedValueType{"A": kw, "B": kw}},
		{name: "some exist", existing: map[string]enumspb.IndexedValueType{"A": kw, "Other": enumspb.INDEXED_VALUE_TYPE_INT}, missing: map[string]enumspb.IndexedValueType{"B": kw}},
		{name: "all exist", existing: map[string]enumspb.IndexedValueType{"A": kw, "B": kw}, missing: map[string]enumspb.IndexedValueType{}},
		{name: "wrong type", existing: map[string]enumspb.IndexedValueType{"A": enumspb.INDEXED_VALUE_TYPE_TEXT}, errPart: "A exists as Text, want Keyword"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := missingKeywords(tt.existing, want)
			if tt.errPart != "" {
				require.ErrorContains(t, err, tt.errPart)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.missing, got)
		})
	}
}
