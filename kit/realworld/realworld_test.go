package realworld

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/sources"
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
	require.Empty(t, sc.Shortfalls(), "the bounds of issue 43")
}
