package activities

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

func TestCapIndicators(t *testing.T) {
	res := indicators.ExtractionResult{}
	for i := range 7 {
		res.Indicators = append(res.Indicators, indicators.Indicator{Type: indicators.TypeIP, Value: fmt.Sprintf("198.51.100.%d", i)})
		res.ExtractedBy = append(res.ExtractedBy, []indicators.Origin{{Pass: 4, FieldPath: fmt.Sprintf("a.%d", i)}})
	}
	inds, by, notes := capIndicators(res, 5)
	require.Len(t, inds, 5)
	require.Len(t, by, 5)
	require.Equal(t, "a.4", by[4][0].FieldPath)
	require.Equal(t, []store.Note{{Field: "indicators",
		Note: "7 indicators found; the first 5 in pass order are linked (MAX_INDICATORS_PER_ALERT)"}}, notes)

	inds, _, notes = capIndicators(res, 500)
	require.Len(t, inds, 7)
	require.Empty(t, notes)

	res.Scan.Stopped = "more than 20000 strings"
	_, _, notes = capIndicators(res, 500)
	require.Equal(t, []store.Note{{Field: "indicators", Note: "pass 4 scanned part of the payload: more than 20000 strings"}}, notes)

	res.Truncated = true
	_, _, notes = capIndicators(res, 0) // 0: indicators.MaxExtracted
	require.Equal(t, "more than 2000 indicators found; the first 7 in pass order are linked", notes[0].Note)
}
