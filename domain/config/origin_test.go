package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// A mapping from an indicator's origin: only a pass-4 origin of that indicator, its array indexes
// generalised, a raw_payload mapping of the indicator's type for the alert's source.
func TestFromOrigin(t *testing.T) {
	ind := store.Indicator{Type: "ip", Value: "203.0.113.9", ExtractedBy: []indicators.Origin{
		{Pass: 1}, {Pass: 3, FieldPath: "Entities.*.Address"}, {Pass: 4, FieldPath: "evidence.0.hosts.12.ipAddress"}}}
	f, err := FromOrigin("sentinel", ind, "evidence.0.hosts.12.ipAddress", "from the console")
	require.NoError(t, err)
	require.Equal(t, "evidence.*.hosts.*.ipAddress", f.FieldPath)
	require.Equal(t, "sentinel", *f.SourceName)
	require.Equal(t, "ip", f.IndicatorType)
	require.Equal(t, string(indicators.TargetRawPayload), f.ExtractionTarget)
	for _, path := range []string{"", "Entities.*.Address", "evidence.1.hosts.12.ipAddress", "x\u0000y"} {
		_, err := FromOrigin("sentinel", ind, path, "")
		require.ErrorIs(t, err, ErrNotAPass4Origin, path)
	}
}
