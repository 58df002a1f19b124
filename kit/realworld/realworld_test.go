package realworld

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/sources"
)

// Bounds of issue 43: overall recall and precision, and each source's.
const (
	minRecall, minPrecision             = 0.90, 0.95
	minSourceRecall, minSourcePrecision = 0.85, 0.85
)

// TestRealWorldCorpus scores extraction on the corpus of real payloads (VIGIL_REALWORLD_DIR, by
// default kit/sources/testdata/realworld) and fails below the bounds.
func TestRealWorldCorpus(t *testing.T) {
	dir := os.Getenv("VIGIL_REALWORLD_DIR")
	if dir == "" {
		dir = "../sources/testdata/realworld"
	}
	data, err := os.ReadFile("../../domain/builtins/mappings.json")
	require.NoError(t, err)
	mappings, err := indicators.ParseMappings(data)
	require.NoError(t, err)
	x := Extractor{Registry: sources.NewRegistry(), Mappings: mappings, Exclusions: indicators.NewExclusions(indicators.DefaultExclusions)}
	sc, err := x.Run(dir)
	require.NoError(t, err)
	require.NotEmpty(t, sc.Payloads, "no labelled payload under %s", dir)
	t.Log("\n" + sc.Table(testing.Verbose()))
	require.GreaterOrEqual(t, sc.All.Recall(), minRecall, "overall recall")
	require.GreaterOrEqual(t, sc.All.Precision(), minPrecision, "overall precision")
	for name, s := range sc.Sources {
		require.GreaterOrEqual(t, s.Recall(), minSourceRecall, "recall of %s", name)
		require.GreaterOrEqual(t, s.Precision(), minSourcePrecision, "precision of %s", name)
	}
}
