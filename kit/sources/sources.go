// Package sources holds the source plugins: one per alerting system Vigil ingests from (Microsoft
// Sentinel, Elastic Security, Splunk, OCSF findings, and any JSON object through generic). A plugin
// turns a source's raw webhook payload into a Normalized alert with pass-1 indicators; no payload
// object is refused for its shape: what a shape lacks comes from a documented fallback, listed in
// Normalized.Notes (docs/SOURCES.md). This package also verifies webhook signatures, applies a source
// integration's severity overrides and computes the dedup fingerprint.
//
// Everything here is pure: no database, no HTTP server.
package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Source names of the built-in plugins.
const (
	SourceSentinel = "sentinel"
	SourceElastic  = "elastic"
	SourceSplunk   = "splunk"
	SourceGeneric  = "generic"
	SourceOCSF     = "ocsf"
)

// Limits applied while normalizing.
const (
	MaxTitleLen       = 500     // characters; longer titles are truncated
	MaxDescriptionLen = 100_000 // characters; longer descriptions are truncated
	MaxTags           = 50      // further tags are dropped
	MaxTagLen         = 100     // characters; longer tags are truncated
	// maxValuesPerField bounds how many values one payload field contributes (fields may be arrays).
	maxValuesPerField = 100
	// maxEntities bounds how many Sentinel entities (and OCSF observables, evidences, resources) are read.
	maxEntities = 1000
	// maxWalkNodes and maxWalkDepth bound the walks over a payload that look for indicator fields
	// at any depth (ECS fields, Sentinel entity lists, OCSF evidences).
	maxWalkNodes = 20_000
	// maxCandidates bounds a plugin's pass-1 candidates; maxNotes bounds the notes of one alert.
	maxCandidates = 2000
	maxNotes      = 50
	maxWalkDepth  = 64
)

// Plugin normalizes the payloads of one alert source.
type Plugin interface {
	// Name is the source_name used in URLs (/v1/ingest/{name}) and stored on alerts.
	Name() string
	// DisplayName is the human name of the source.
	DisplayName() string
	// Documentation is markdown describing the payload shape and the signature header.
	Documentation() string
	// DefaultAuthType is the auth type a new source integration gets: AuthNone, AuthHMACSHA256 or
	// AuthSharedToken.
	DefaultAuthType() string
	// SignatureHeader is the request header carrying the HMAC signature or the shared token.
	SignatureHeader() string
	// Normalize maps any decoded JSON object to a Normalized alert; it never refuses one. A field of
	// the wrong kind is ignored and noted. The title, severity and time fallbacks and the severity
	// overrides are applied by the package's Normalize, not here.
	Normalize(payload map[string]any) Normalized
}

// Note records a fallback used while normalizing, or a payload field that was ignored: Field names
// the alert field or payload path, Note says what happened. Stored in the alert's normalized record
// as normalization_notes (the pipeline appends its own, same shape).
type Note struct {
	Field string `json:"field"`
	Note  string `json:"note"`
}

// RuleRef identifies the detection rule in the source system that raised the alert.
type RuleRef struct {
	SourceRuleID string // stable id in the source; matched with source_name to a detection rule
	Name         string // human name when the payload carries one; "" otherwise (use SourceRuleID)
}

// Normalized is a source payload mapped onto Vigil's alert fields.
type Normalized struct {
	Title          string
	Severity       Severity
	SourceSeverity string // the source's own severity value as text ("" when absent); override key
	// SeverityUnmapped: the source gave a severity (SourceSeverity) that neither the plugin nor the
	// integration's severity_mapping knows, so Severity is Pending for that reason (Normalize sets it).
	SeverityUnmapped bool
	OccurredAt       time.Time // UTC; zero when the payload has no usable timestamp (caller uses now)
	Description      string
	Tags             []string // never nil
	RuleRef          *RuleRef // nil when the payload names no rule
	// Fields are the normalized fields pass 2 reads (indicators.Field* names). Each value is a string,
	// or a []string when the payload had several values. Absent fields are not set.
	Fields map[string]any
	// Indicators are the plugin's own (pass-1) candidates, not yet normalized: feed them to
	// indicators.Extract, which normalizes them and records invalid ones.
	Indicators []indicators.Indicator
	// Notes lists every fallback used and every field ignored, in the order they happened; never nil.
	Notes []Note
	// Untitled: the payload had no title and no description, so Title is "Untitled <source> alert".
	Untitled bool
}

// note appends a normalization note.
func (n *Normalized) note(field, note string) {
	for _, x := range n.Notes {
		if x.Field == field && x.Note == note {
			return
		}
	}
	switch {
	case len(n.Notes) < maxNotes-1:
		n.Notes = append(n.Notes, Note{Field: field, Note: note})
	case len(n.Notes) == maxNotes-1:
		n.Notes = append(n.Notes, Note{Field: "normalization_notes", Note: "further notes omitted"})
	}
}

func (n *Normalized) hasNote(field string) bool {
	for _, x := range n.Notes {
		if x.Field == field {
			return true
		}
	}
	return false
}

// Normalize runs p over payload, applies a source integration's severity overrides (severity_mapping:
// source value → AlertSeverity, which take precedence over the plugin's mapping; overrides may be nil)
// and then the fallbacks of API.md §2, each noted: title = first line of the description, else
// "Untitled <source> alert"; severity Pending (severity_unmapped when the source gave a value nothing
// maps); occurred_at zero (the caller uses ingested_at). It never refuses a payload.
func Normalize(p Plugin, payload map[string]any, overrides map[string]string) Normalized {
	n := p.Normalize(payload)
	if n.Notes == nil {
		n.Notes = []Note{}
	}
	if n.Tags == nil {
		n.Tags = []string{}
	}
	if n.Fields == nil {
		n.Fields = map[string]any{}
	}
	if n.Indicators == nil {
		n.Indicators = []indicators.Indicator{}
	}
	if n.Severity == "" {
		n.Severity = SeverityPending
	}
	n = ApplySeverityOverrides(n, overrides)
	src := strings.TrimSpace(n.SourceSeverity)
	n.SeverityUnmapped = n.Severity == SeverityPending && src != "" && !strings.EqualFold(src, string(SeverityPending))
	switch {
	case n.SeverityUnmapped:
		n.note("severity", fmt.Sprintf("severity_unmapped: %q matches no known word or scale nor the integration's severity_mapping; Pending", truncateRunes(src, 100)))
	case n.Severity == SeverityPending && src == "":
		n.note("severity", "no severity in the payload; Pending")
	}
	if n.Title == "" {
		if line := firstLine(n.Description); line != "" {
			n.Title = line
			n.note("title", "no title key of the source; first line of the description used")
		} else {
			n.Title, n.Untitled = "Untitled "+p.Name()+" alert", true
			n.note("title", "no title key of the source and no description; \""+n.Title+"\" used")
		}
	}
	if n.OccurredAt.IsZero() && !n.hasNote("occurred_at") {
		n.note("occurred_at", "no timestamp in the payload; ingested_at used")
	}
	return n
}

// firstLine is the first non-blank line of s as a title ("" when none).
func firstLine(s string) string {
	for rest := s; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if t := cleanTitle(line); t != "" {
			return t
		}
	}
	return ""
}

// ApplySeverityOverrides returns n with Severity replaced when n.SourceSeverity matches a key of
// overrides (trimmed, case-insensitive) whose value is a valid AlertSeverity. Invalid override values
// are ignored (ValidateSeverityMapping rejects them on write).
func ApplySeverityOverrides(n Normalized, overrides map[string]string) Normalized {
	src := strings.TrimSpace(n.SourceSeverity)
	if src == "" || len(overrides) == 0 {
		return n
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic when two keys differ only in case
	for _, k := range keys {
		if !strings.EqualFold(strings.TrimSpace(k), src) {
			continue
		}
		if sev, err := severity.Parse(overrides[k]); err == nil {
			n.Severity = sev
			return n
		}
	}
	return n
}

// ValidateSeverityMapping checks a source integration's severity_mapping: non-empty keys (≤ 100
// characters), values that are AlertSeverity names. Locations are the mapping keys.
func ValidateSeverityMapping(m map[string]string) validate.Errors {
	var errs validate.Errors
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			errs.Add([]any{k}, validate.TypeStringTooShort, "source severity value must not be empty", k)
			continue
		}
		if len([]rune(k)) > 100 {
			errs.Add([]any{k}, validate.TypeStringTooLong, "source severity value must be at most 100 characters", k)
		}
		if _, err := severity.Parse(m[k]); err != nil {
			errs.AddCtx([]any{k}, validate.TypeEnum, "must be an alert severity", m[k],
				map[string]any{"allowed": severity.Levels()})
		}
	}
	return errs
}

// Fingerprint is the dedup key of an alert: hex SHA-256 over the title, the source name and the sorted,
// distinct "type:value" pairs of inds (pass-1 and pass-2 indicators, normalized; see
// indicators.ExtractionResult.FingerprintIndicators). Each component is length-prefixed, so no choice of
// title can collide with a different split of the same bytes.
func Fingerprint(title, sourceName string, inds []indicators.Indicator) string {
	keys := make([]string, 0, len(inds))
	seen := make(map[string]struct{}, len(inds))
	for _, ind := range inds {
		k := ind.Key()
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	write := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	write("vigil-fingerprint-v1")
	write(title)
	write(sourceName)
	for _, k := range keys {
		write(k)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AlertFingerprint is the dedup key of a normalized alert of source (API.md §2): Fingerprint over its
// title and its pass-1 and pass-2 indicators (inds), or, for an alert that names nothing (the untitled
// fallback and no such indicator), PayloadFingerprint over payload.
func AlertFingerprint(n Normalized, source string, inds []indicators.Indicator, payload map[string]any) string {
	if n.Untitled && len(inds) == 0 {
		return PayloadFingerprint(n.Title, source, payload)
	}
	return Fingerprint(n.Title, source, inds)
}

// PayloadFingerprint is the dedup key of an alert that names nothing — the untitled fallback and no
// pass-1 or pass-2 indicator — whose Fingerprint would be the same for every such alert of the source:
// the title and the source with a digest of the payload (canonical JSON), so that two different
// untitled alerts are not taken for repeats of one another, while the same payload sent again is.
func PayloadFingerprint(title, sourceName string, payload map[string]any) string {
	canon, err := json.Marshal(payload) // map keys sorted: one text per payload
	if err != nil {
		canon = []byte(fmt.Sprint(payload))
	}
	sum := sha256.Sum256(canon)
	return Fingerprint(title, sourceName, []indicators.Indicator{{Type: "payload", Value: hex.EncodeToString(sum[:])}})
}

// Registry holds the known source plugins by name.
type Registry struct {
	plugins map[string]Plugin
}

// NewRegistry returns a registry with the built-in plugins: sentinel, elastic, splunk, generic, ocsf.
func NewRegistry() *Registry {
	r := &Registry{plugins: make(map[string]Plugin)}
	for _, p := range []Plugin{Sentinel{}, Elastic{}, Splunk{}, Generic{}, OCSF{}} {
		r.plugins[p.Name()] = p
	}
	return r
}

// Add registers another plugin; a name already taken is an error.
func (r *Registry) Add(p Plugin) error {
	name := p.Name()
	if name == "" {
		return fmt.Errorf("add source plugin: empty name")
	}
	if _, ok := r.plugins[name]; ok {
		return fmt.Errorf("add source plugin %q: name already registered", name)
	}
	r.plugins[name] = p
	return nil
}

// Get returns the plugin named name.
func (r *Registry) Get(name string) (Plugin, bool) {
	p, ok := r.plugins[name]
	return p, ok
}

// All returns every plugin sorted by name.
func (r *Registry) All() []Plugin {
	out := make([]Plugin, 0, len(r.plugins))
	for _, p := range r.plugins {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}
