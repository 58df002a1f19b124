package realworld

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/sources"
)

// benchPayload is VIGIL_BENCH_PAYLOAD, else the corpus payload closest to 20 KB.
func benchPayload(b *testing.B) (string, map[string]any) {
	path := os.Getenv("VIGIL_BENCH_PAYLOAD")
	if path == "" {
		dir := os.Getenv("VIGIL_REALWORLD_DIR")
		if dir == "" {
			dir = "../sources/testdata/realworld"
		}
		best := int64(-1)
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".labels.json") {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if dist := abs(info.Size() - 20_000); best < 0 || dist < best {
				best, path = dist, p
			}
			return nil
		})
	}
	if path == "" {
		b.Fatal("no payload: set VIGIL_BENCH_PAYLOAD or VIGIL_REALWORLD_DIR")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	return path, m
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkPipelineExtract is the extraction work of PipelineExtract on a real payload of about
// 20 KB: "before" is passes 1-3 with the 14 pass-2 system mappings (the pipeline before pass 4),
// "after" passes 1-4 with every system mapping and the default never-indicator list.
func BenchmarkPipelineExtract(b *testing.B) {
	path, raw := benchPayload(b)
	b.Logf("payload %s", path)
	data, err := os.ReadFile("../../domain/builtins/mappings.json")
	if err != nil {
		b.Fatal(err)
	}
	all, err := indicators.ParseMappings(data)
	if err != nil {
		b.Fatal(err)
	}
	var pass2 []indicators.Mapping
	for _, m := range all {
		if m.Target == indicators.TargetNormalized {
			pass2 = append(pass2, m)
		}
	}
	plugin, _ := sources.NewRegistry().Get(sources.SourceElastic)
	n := sources.Normalize(plugin, raw, nil)
	excl := indicators.NewExclusions(indicators.DefaultExclusions)
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			indicators.Extract(n.Fields, raw, plugin.Name(), n.Indicators, pass2)
		}
	})
	b.Run("after", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			indicators.ExtractWith(n.Fields, raw, plugin.Name(), n.Indicators, all, indicators.Options{Pass4: true, Exclusions: excl})
		}
	})
}
