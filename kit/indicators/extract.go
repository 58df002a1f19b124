package indicators

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Normalized alert fields that source plugins fill and pass-2 mappings read (API.md §4).
const (
	FieldSrcIP          = "src_ip"
	FieldDstIP          = "dst_ip"
	FieldSrcHostname    = "src_hostname"
	FieldDstHostname    = "dst_hostname"
	FieldFileHashMD5    = "file_hash_md5"
	FieldFileHashSHA1   = "file_hash_sha1"
	FieldFileHashSHA256 = "file_hash_sha256"
	FieldActorEmail     = "actor_email"
	FieldActorUsername  = "actor_username"
	FieldDNSQuery       = "dns_query"
	FieldHTTPURL        = "http_url"
	FieldHTTPHostname   = "http_hostname"
	FieldEmailFrom      = "email_from"
	FieldEmailReplyTo   = "email_reply_to"
)

// Target says what a mapping's field path is evaluated against.
type Target string

// Extraction targets.
const (
	TargetNormalized Target = "normalized"  // pass 2: the plugin's normalized fields
	TargetRawPayload Target = "raw_payload" // pass 3: the payload as received
)

// Valid reports whether t is a known target.
func (t Target) Valid() bool { return t == TargetNormalized || t == TargetRawPayload }

// TargetNames returns every extraction target, pass order.
func TargetNames() []string { return []string{string(TargetNormalized), string(TargetRawPayload)} }

// Extraction limits. A hostile payload with a fan-out mapping must not produce unbounded output.
const (
	// MaxExtracted bounds the merged, deduplicated indicators of one extraction.
	MaxExtracted = 2000
	// MaxSkipped bounds the Skipped list; further skips are only counted in SkippedOmitted.
	MaxSkipped = 500
	// maxFlattenDepth bounds how deep nested arrays of values are flattened.
	maxFlattenDepth = 8
)

// Mapping is one pass-2/pass-3 extraction rule: the values at FieldPath become indicators of Type.
type Mapping struct {
	SourceName  string // "" applies to every source
	FieldPath   string // fieldpath syntax: dots, numeric indexes, "*" fan-out
	Type        Type
	Target      Target
	Description string // for humans; ignored by Extract
}

// Applies reports whether the mapping is used for alerts of sourceName.
func (m Mapping) Applies(sourceName string) bool {
	return m.SourceName == "" || m.SourceName == sourceName
}

// Validate checks a mapping written through the API. Locations are the API field names
// (field_path, indicator_type, extraction_target).
func (m Mapping) Validate() validate.Errors {
	var errs validate.Errors
	if err := fieldpath.Validate(m.FieldPath); err != nil {
		errs.Add([]any{"field_path"}, validate.TypeValue, err.Error(), m.FieldPath)
	}
	if !m.Type.Valid() {
		errs.AddCtx([]any{"indicator_type"}, validate.TypeEnum, "unknown indicator type", string(m.Type),
			map[string]any{"allowed": Types()})
	}
	if !m.Target.Valid() {
		errs.AddCtx([]any{"extraction_target"}, validate.TypeEnum, "unknown extraction target", string(m.Target),
			map[string]any{"allowed": []Target{TargetNormalized, TargetRawPayload}})
	}
	return errs
}

// ParseMappings decodes a JSON array of mappings in the API's field names (source_name, field_path,
// indicator_type, extraction_target, description); unknown fields are rejected and every mapping
// must pass Validate. The system mappings (builtins/mappings.json) are read with it.
func ParseMappings(data []byte) ([]Mapping, error) {
	var rows []struct {
		SourceName       string `json:"source_name"`
		FieldPath        string `json:"field_path"`
		IndicatorType    Type   `json:"indicator_type"`
		ExtractionTarget Target `json:"extraction_target"`
		Description      string `json:"description"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rows); err != nil {
		return nil, fmt.Errorf("decode mappings: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode mappings: data after the array")
	}
	out := make([]Mapping, 0, len(rows))
	for i, r := range rows {
		m := Mapping{SourceName: r.SourceName, FieldPath: r.FieldPath, Type: r.IndicatorType, Target: r.ExtractionTarget, Description: r.Description}
		if errs := m.Validate(); len(errs) > 0 {
			return nil, fmt.Errorf("mapping %d (%s): %w", i, m.FieldPath, errs)
		}
		out = append(out, m)
	}
	return out, nil
}

// SkippedValue is a value an extraction pass found but could not use.
type SkippedValue struct {
	Pass   int    `json:"pass"`
	Path   string `json:"path,omitempty"` // mapping field path; empty for pass 1
	Type   Type   `json:"type"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// Origin says where an extraction pass found an indicator: the pass (1-4) and the field path. Pass 1
// has no path (the plugin does not say where it read a value); passes 2 and 3 give the mapping's field
// path; pass 4 gives the concrete path of the string in the raw payload (Entities.3.Address).
type Origin struct {
	Pass      int    `json:"pass"`
	FieldPath string `json:"field_path"`
}

// MaxOrigins bounds the origins recorded per indicator; the first ones in pass order are kept.
const MaxOrigins = 8

// ExtractionResult is what the passes produced. Pass1..Pass4 are each normalized and deduplicated
// within the pass; Indicators is their merge in pass order, deduplicated on (type, value), and
// ExtractedBy[i] lists where Indicators[i] was found.
type ExtractionResult struct {
	Pass1          []Indicator    `json:"pass1"`
	Pass2          []Indicator    `json:"pass2"`
	Pass3          []Indicator    `json:"pass3"`
	Pass4          []Indicator    `json:"pass4,omitempty"`
	Indicators     []Indicator    `json:"indicators"`
	ExtractedBy    [][]Origin     `json:"-"` // the API's responses pair them with Indicators
	Skipped        []SkippedValue `json:"skipped"`
	SkippedOmitted int            `json:"skipped_omitted"` // skips beyond MaxSkipped
	Truncated      bool           `json:"truncated"`       // MaxExtracted was reached
	Scan           ScanStats      `json:"scan,omitzero"`   // pass 4's visit (zero when pass 4 did not run)
}

// FingerprintIndicators returns the pass-1 and pass-2 indicators, deduplicated: the set the dedup
// fingerprint is computed over (API.md §2).
func (r ExtractionResult) FingerprintIndicators() []Indicator {
	out := make([]Indicator, 0, len(r.Pass1)+len(r.Pass2))
	out = append(out, r.Pass1...)
	out = append(out, r.Pass2...)
	return Dedup(out)
}

// Options turn on the pipeline's parts of extraction: pass 4 and the never-indicator list. The zero
// value is ingestion's extraction (passes 1-3 as configured, no list), whose passes 1-2 give the
// dedup fingerprint, so neither pass 4 nor a change of the list can split duplicates.
type Options struct {
	Pass4      bool
	Budget     ScanBudget  // pass 4's budget; zero: DefaultScanBudget
	Exclusions *Exclusions // applied to passes 2-4; nil: none
}

// Extract runs passes 1-3 over one alert. pass1 is what the source plugin found; pass 2 applies the
// mappings targeting normalized fields to normalizedFields; pass 3 applies the mappings targeting
// raw_payload to raw. Only mappings that apply to sourceName are used, in the order given. Values may
// be strings, numbers or (nested) arrays of them; each value is normalized, and an invalid one is
// recorded in Skipped rather than failing the extraction.
func Extract(normalizedFields, raw map[string]any, sourceName string, pass1 []Indicator, mappings []Mapping) ExtractionResult {
	return ExtractWith(normalizedFields, raw, sourceName, pass1, mappings, Options{})
}

// ExtractForPipeline is what the pipeline extracts: the four passes with the never-indicator list excl
// (nil: none). The one composition the pipeline, the test-extraction preview and the corpus scorer
// share, so a preview shows what an alert gets.
func ExtractForPipeline(normalizedFields, raw map[string]any, sourceName string, pass1 []Indicator, mappings []Mapping, excl *Exclusions) ExtractionResult {
	return ExtractWith(normalizedFields, raw, sourceName, pass1, mappings, Options{Pass4: true, Exclusions: excl})
}

// ExtractWith is Extract with the pipeline's options: pass 4 over raw (a bounded scan of every string
// value, docs/SOURCES.md "Pass 4") and the never-indicator list, which drops values of passes 2-4.
func ExtractWith(normalizedFields, raw map[string]any, sourceName string, pass1 []Indicator, mappings []Mapping, opts Options) ExtractionResult {
	x := extractor{
		res:     ExtractionResult{Skipped: []SkippedValue{}, Pass4: []Indicator{}},
		seen:    make(map[Indicator]int),
		merged:  []Indicator{},
		exclude: opts.Exclusions,
		strict:  opts.Pass4,
	}
	x.res.Pass1 = x.pass(1, func(emit emitFunc) {
		for _, ind := range pass1 {
			emit("", ind.Type, ind.Value)
		}
	})
	x.res.Pass2 = x.pass(2, func(emit emitFunc) {
		x.applyMappings(emit, normalizedFields, sourceName, mappings, TargetNormalized)
	})
	x.res.Pass3 = x.pass(3, func(emit emitFunc) {
		x.applyMappings(emit, raw, sourceName, mappings, TargetRawPayload)
	})
	if opts.Pass4 && raw != nil {
		budget := opts.Budget
		if budget == (ScanBudget{}) {
			budget = DefaultScanBudget
		}
		x.res.Pass4 = x.pass(4, func(emit emitFunc) {
			sc := scanner{budget: budget, emit: emit}
			if budget.Time > 0 {
				sc.deadline = time.Now().Add(budget.Time)
			}
			sc.walk(raw, keyPlain, 0)
			sc.stats.Excluded = x.res.Scan.Excluded
			x.res.Scan = sc.stats
		})
	}
	x.res.Indicators = x.merged
	x.res.ExtractedBy = x.origins
	return x.res
}

type emitFunc func(path string, t Type, value string)

type extractor struct {
	res     ExtractionResult
	seen    map[Indicator]int // index in merged
	merged  []Indicator
	origins [][]Origin
	exclude *Exclusions
	strict  bool // the pipeline's extraction (Options.Pass4): publicValue applies to passes 2-4
}

func (x *extractor) skip(s SkippedValue) {
	if len(x.res.Skipped) >= MaxSkipped {
		x.res.SkippedOmitted++
		return
	}
	s.Value = truncate(s.Value, 256)
	x.res.Skipped = append(x.res.Skipped, s)
}

// pass runs one pass and returns its normalized, deduplicated indicators, adding new ones to merged
// and the pass's origins to every indicator it found.
func (x *extractor) pass(n int, run func(emitFunc)) []Indicator {
	out := []Indicator{}
	inPass := make(map[Indicator]struct{})
	run(func(path string, t Type, value string) {
		norm, err := Normalize(t, value)
		if err != nil {
			if n < 4 { // pass 4's candidates are guesses: a miss is not worth a record
				x.skip(SkippedValue{Pass: n, Path: path, Type: t, Value: value, Reason: err.Error()})
			}
			return
		}
		ind := Indicator{Type: t, Value: norm}
		if n > 1 && (x.exclude.Excludes(ind) || x.strict && ind.Type == TypeAccount && builtinAccounts[strings.ToLower(ind.Value)]) {
			x.res.Scan.Excluded++
			return
		}
		if n > 1 && x.strict && !publicValue(ind) {
			x.skip(SkippedValue{Pass: n, Path: path, Type: t, Value: value, Reason: "a placeholder or a name outside the public DNS"})
			return
		}
		i, ok := x.seen[ind]
		if !ok {
			if len(x.merged) >= MaxExtracted {
				x.res.Truncated = true
				return
			}
			i = len(x.merged)
			x.seen[ind] = i
			x.merged = append(x.merged, ind)
			x.origins = append(x.origins, nil)
		}
		if _, ok := inPass[ind]; !ok {
			inPass[ind] = struct{}{}
			out = append(out, ind)
		}
		x.addOrigin(i, Origin{Pass: n, FieldPath: path})
	})
	return out
}

// publicValue: in the pipeline, a domain found by passes 2-4 must end in an ICANN public suffix
// (lees-mbp.localdomain, dc01.corp.local name hosts of the sender's own network), and a placeholder
// (Placeholder: 000…0, xxx, username) is none. Ingestion's passes 1-2 (the fingerprint) do not apply it.
func publicValue(ind Indicator) bool {
	if ind.Type == TypeDomain {
		_, ok := scanDomain(ind.Value)
		return ok
	}
	return !Placeholder(ind.Type, ind.Value)
}

// builtinAccounts are the operating systems' own accounts, which every host has: not an indicator
// when, in the pipeline, a mapping or pass 4 finds one (pass 1 keeps what a plugin names explicitly;
// ingestion's fingerprint keeps them).
var builtinAccounts = setOf("system", "local service", "network service", "nt authority\\system",
	"nt authority\\local service", "nt authority\\network service", "localsystem")

func (x *extractor) addOrigin(i int, o Origin) {
	os := x.origins[i]
	if len(os) >= MaxOrigins {
		return
	}
	for _, have := range os {
		if have == o {
			return
		}
	}
	x.origins[i] = append(os, o)
}

func (x *extractor) applyMappings(emit emitFunc, root map[string]any, sourceName string, mappings []Mapping, target Target) {
	n := 2
	if target == TargetRawPayload {
		n = 3
	}
	for _, m := range mappings {
		if m.Target != target || !m.Applies(sourceName) {
			continue
		}
		if !m.Type.Valid() {
			x.skip(SkippedValue{Pass: n, Path: m.FieldPath, Type: m.Type, Reason: "mapping has an unknown indicator type"})
			continue
		}
		if root == nil {
			continue
		}
		for _, v := range fieldpath.Get(root, m.FieldPath) {
			x.emitValue(emit, n, m, v, 0)
		}
	}
}

func (x *extractor) emitValue(emit emitFunc, pass int, m Mapping, v any, depth int) {
	switch val := v.(type) {
	case nil:
		return
	case string:
		emit(m.FieldPath, m.Type, val)
	case []string:
		for _, s := range val {
			emit(m.FieldPath, m.Type, s)
		}
	case []any:
		if depth >= maxFlattenDepth {
			x.skip(SkippedValue{Pass: pass, Path: m.FieldPath, Type: m.Type, Reason: "arrays nested too deeply"})
			return
		}
		for _, e := range val {
			x.emitValue(emit, pass, m, e, depth+1)
		}
	default:
		s, ok := scalarString(val)
		if !ok {
			x.skip(SkippedValue{Pass: pass, Path: m.FieldPath, Type: m.Type, Value: fmt.Sprintf("<%T>", val),
				Reason: "value is not a string, number or array"})
			return
		}
		emit(m.FieldPath, m.Type, s)
	}
}

// scalarString renders a JSON number as text; other kinds (objects, booleans) are not indicator values.
func scalarString(v any) (string, bool) {
	switch n := v.(type) {
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "", false
		}
		return strconv.FormatFloat(n, 'f', -1, 64), true
	case json.Number:
		return n.String(), true
	case int:
		return strconv.Itoa(n), true
	case int64:
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
