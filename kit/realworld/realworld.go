// Package realworld scores indicator extraction on a corpus of real vendor payloads (issue 43): each
// `<product>/NAME.json` beside its `NAME.labels.json` (`source`, the `indicators` [{type, value}] a
// careful analyst extracts, the `not_indicators` that are not) is normalized by its source's plugin and
// extracted the way the pipeline does (passes 1-4, system mappings, the never-indicator list); recall
// and precision are counted per source and overall. The test in this package and `vigil-load
// realworld` print the same table.
package realworld

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/sources"
)

// Labels is a payload's NAME.labels.json.
type Labels struct {
	Source        string                 `json:"source"`
	Indicators    []indicators.Indicator `json:"indicators"`
	NotIndicators []string               `json:"not_indicators"`
}

// Payload is the score of one payload.
type Payload struct {
	Path       string   // relative to the corpus directory
	Source     string   // the labels' source
	Plugin     string   // the plugin that normalized it (generic when the source has none here)
	Accepted   bool     // the plugin normalized it without a validation error
	Labelled   int      // labelled indicators
	Found      int      // labelled indicators extracted
	Extracted  int      // indicators extracted
	Correct    int      // extracted indicators that are labelled
	Missed     []string // labelled, not extracted ("type:value")
	Extra      []string // extracted, not labelled
	NotIndHits []string // extracted values the labels list as not indicators
}

// Score is a corpus's result: per payload and summed per source and overall.
type Score struct {
	Payloads []Payload
	Sources  map[string]*Sum
	All      Sum
}

// Sum adds up payloads.
type Sum struct {
	Payloads, Accepted, Labelled, Found, Extracted, Correct int
}

// Recall is found / labelled (1 when nothing is labelled).
func (s Sum) Recall() float64 {
	if s.Labelled == 0 {
		return 1
	}
	return float64(s.Found) / float64(s.Labelled)
}

// Precision is correct / extracted (1 when nothing is extracted).
func (s Sum) Precision() float64 {
	if s.Extracted == 0 {
		return 1
	}
	return float64(s.Correct) / float64(s.Extracted)
}

func (s *Sum) add(p Payload) {
	s.Payloads++
	if p.Accepted {
		s.Accepted++
	}
	s.Labelled += p.Labelled
	s.Found += p.Found
	s.Extracted += p.Extracted
	s.Correct += p.Correct
}

// Extractor is the extraction the pipeline runs: the system mappings and the never-indicator list.
type Extractor struct {
	Registry   *sources.Registry
	Mappings   []indicators.Mapping
	Exclusions *indicators.Exclusions
}

// Run scores every labelled payload under dir.
func (x Extractor) Run(dir string) (Score, error) {
	sc := Score{Sources: map[string]*Sum{}}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".labels.json") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return Score{}, fmt.Errorf("walk %s: %w", dir, err)
	}
	sort.Strings(files)
	for _, lf := range files {
		p, err := x.one(dir, lf)
		if err != nil {
			return Score{}, err
		}
		sc.Payloads = append(sc.Payloads, p)
		if sc.Sources[p.Source] == nil {
			sc.Sources[p.Source] = &Sum{}
		}
		sc.Sources[p.Source].add(p)
		sc.All.add(p)
	}
	return sc, nil
}

func (x Extractor) one(dir, labelsFile string) (Payload, error) {
	data, err := os.ReadFile(labelsFile)
	if err != nil {
		return Payload{}, fmt.Errorf("read labels: %w", err)
	}
	var lab Labels
	if err := json.Unmarshal(data, &lab); err != nil {
		return Payload{}, fmt.Errorf("decode %s: %w", labelsFile, err)
	}
	payloadFile := strings.TrimSuffix(labelsFile, ".labels.json") + ".json"
	raw, err := os.ReadFile(payloadFile)
	if err != nil {
		return Payload{}, fmt.Errorf("read payload of %s: %w", labelsFile, err)
	}
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil {
		return Payload{}, fmt.Errorf("decode %s: %w", payloadFile, err)
	}
	rel, _ := filepath.Rel(dir, payloadFile)
	p := Payload{Path: rel, Source: lab.Source, Plugin: lab.Source}
	plugin, ok := x.Registry.Get(lab.Source)
	if !ok {
		plugin, _ = x.Registry.Get(sources.SourceGeneric)
		p.Plugin = sources.SourceGeneric
	}
	n, errs := sources.Normalize(plugin, payload, nil)
	p.Accepted = len(errs) == 0
	res := indicators.ExtractWith(n.Fields, payload, plugin.Name(), n.Indicators, x.Mappings,
		indicators.Options{Pass4: true, Exclusions: x.Exclusions})

	want := map[string]bool{}
	for _, ind := range lab.Indicators {
		want[key(ind)] = true
	}
	// An e-mail address labelled as an account (a UPN) is found when it is extracted as an e-mail
	// address, and the other way round: one value, two names.
	alias := func(k string) string {
		switch {
		case strings.HasPrefix(k, "email:"):
			return "account:" + strings.TrimPrefix(k, "email:")
		case strings.HasPrefix(k, "account:") && strings.Contains(k, "@"):
			return "email:" + strings.TrimPrefix(k, "account:")
		}
		return ""
	}
	not := map[string]bool{}
	for _, v := range lab.NotIndicators {
		not[strings.ToLower(strings.TrimSpace(v))] = true
	}
	got := map[string]bool{}
	for _, ind := range res.Indicators {
		k := key(ind)
		if got[k] {
			continue
		}
		got[k] = true
		p.Extracted++
		if !want[k] && want[alias(k)] {
			k = alias(k)
			got[k] = true
		}
		if want[k] {
			p.Correct++
		} else {
			p.Extra = append(p.Extra, k)
			if not[strings.ToLower(ind.Value)] {
				p.NotIndHits = append(p.NotIndHits, k)
			}
		}
	}
	p.Labelled = len(want)
	for k := range want {
		if got[k] {
			p.Found++
		} else {
			p.Missed = append(p.Missed, k)
		}
	}
	sort.Strings(p.Missed)
	return p, nil
}

// key is "type:value", the value normalized as extraction does when it can be, compared
// case-insensitively.
func key(ind indicators.Indicator) string {
	v := ind.Value
	if n, err := indicators.Normalize(ind.Type, v); err == nil {
		v = n
	}
	return string(ind.Type) + ":" + strings.ToLower(strings.TrimSpace(v))
}

// Table is the score as text: a line per source and overall, then what each payload missed and what
// it extracted beyond its labels.
func (s Score) Table(details bool) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "source\tpayloads\taccepted\tlabelled\tfound\textracted\tcorrect\trecall\tprecision\t")
	names := make([]string, 0, len(s.Sources))
	for n := range s.Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	line := func(name string, m Sum) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f %%\t%.1f %%\t\n", name, m.Payloads, m.Accepted, m.Labelled,
			m.Found, m.Extracted, m.Correct, 100*m.Recall(), 100*m.Precision())
	}
	for _, n := range names {
		line(n, *s.Sources[n])
	}
	line("all", s.All)
	_ = w.Flush()
	if details {
		for _, p := range s.Payloads {
			if len(p.Missed) == 0 && len(p.Extra) == 0 {
				continue
			}
			fmt.Fprintf(&b, "%s (%s via %s):\n", p.Path, p.Source, p.Plugin)
			if len(p.Missed) > 0 {
				fmt.Fprintf(&b, "  missed: %s\n", strings.Join(p.Missed, " "))
			}
			if len(p.Extra) > 0 {
				fmt.Fprintf(&b, "  extra:  %s\n", strings.Join(p.Extra, " "))
			}
		}
	}
	return b.String()
}
