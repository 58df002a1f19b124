package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/realworld"
	"github.com/vigil-soc/vigil/kit/sources"
)

// realWorld prints extraction's score on the corpus of real payloads (kit/realworld): the plugins,
// the system mappings, pass 4 and the default never-indicator list, as a new installation runs them.
func realWorld(out io.Writer, dir string, details bool) error {
	if dir == "" {
		dir = os.Getenv("VIGIL_REALWORLD_DIR")
	}
	if dir == "" {
		dir = "kit/sources/testdata/realworld"
	}
	mappings, err := builtins.SystemMappings()
	if err != nil {
		return err
	}
	x := realworld.Extractor{Registry: sources.NewRegistry(), Mappings: mappings,
		Exclusions: indicators.NewExclusions(indicators.DefaultExclusions)}
	sc, err := x.Run(dir)
	if err != nil {
		return err
	}
	if len(sc.Payloads) == 0 {
		return fmt.Errorf("realworld: no labelled payload under %s", dir)
	}
	_, err = io.WriteString(out, sc.Table(details))
	return err
}

// explicitIndicators prints the JSON object in file with what a new installation's pipeline extracts
// from it as a generic alert (realworld.Extractor) added as its indicators[]: the same payload an older
// build, which finds fewer, links the same indicators from (issue43.sh).
func explicitIndicators(out io.Writer, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil {
		return fmt.Errorf("%s: not a JSON object: %w", file, err)
	}
	mappings, err := builtins.SystemMappings()
	if err != nil {
		return err
	}
	plugin, _ := sources.NewRegistry().Get(sources.SourceGeneric)
	n := sources.Normalize(plugin, payload, nil)
	res := indicators.ExtractForPipeline(n.Fields, payload, plugin.Name(), n.Indicators, mappings, indicators.NewExclusions(indicators.DefaultExclusions))
	list := make([]map[string]string, len(res.Indicators))
	for i, ind := range res.Indicators {
		list[i] = map[string]string{"type": string(ind.Type), "value": ind.Value}
	}
	payload["indicators"] = list
	return json.NewEncoder(out).Encode(payload)
}
