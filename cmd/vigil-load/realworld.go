package main

import (
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
