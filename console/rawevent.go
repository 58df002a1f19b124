package console

import (
	"slices"
	"unicode/utf8"

	"github.com/vigil-soc/vigil/store"
)

// Bounds of the alert page's raw event and normalized fields (docs/CONSOLE.md "Raw event"): the page
// stays small whatever the payload (ingest accepts payloads up to the body limit).
const (
	rawShownBytes    = 32 << 10 // the raw payload's pretty-printed JSON shown, cut after this
	normalizedFields = 200      // normalized fields listed; the rest are counted
)

// rawView is the alert's raw event and normalized fields as the page shows them: text only, escaped
// by the template (json.Marshal also writes <, > and & as \u escapes), bounded.
type rawView struct {
	JSON           string // the raw payload, pretty-printed, at most rawShownBytes
	Bytes, Shown   int    // its full and shown sizes in bytes
	Cut, Sanitized bool   // JSON was cut; hostile characters were replaced at ingest (the REST detail has the original)
	Fields         []kv   // the normalized fields, by name, each value cut at 200 characters
	MoreFields     int    // fields not listed
	SourceSeverity string
	RuleRef        string // the source's rule id and name
	Candidates     int    // indicator candidates the source plugin found
	Notes          []kv   // normalization notes (issue 43): field → what the plugin did, each cut at 200 characters
}

type kv struct{ K, V string }

func rawEvent(a store.Alert) rawView {
	v := rawView{Sanitized: a.InputSanitized, SourceSeverity: a.Normalized.SourceSeverity, Candidates: len(a.Normalized.Indicators)}
	if a.RawPayload != nil {
		s := fmtJSON(a.RawPayload)
		v.Bytes = len(s)
		if len(s) > rawShownBytes {
			cut := rawShownBytes
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s, v.Cut = s[:cut], true
		}
		v.JSON, v.Shown = s, len(s)
	}
	for _, n := range a.Normalized.NormalizationNotes {
		v.Notes = append(v.Notes, kv{K: shortValue(n.Field), V: shortValue(n.Note)})
	}
	if r := a.Normalized.RuleRef; r != nil {
		v.RuleRef = r.SourceRuleID
		if r.Name != "" {
			v.RuleRef += " (" + r.Name + ")"
		}
	}
	keys := make([]string, 0, len(a.Normalized.Fields))
	for k := range a.Normalized.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > normalizedFields {
		v.MoreFields = len(keys) - normalizedFields
		keys = keys[:normalizedFields]
	}
	for _, k := range keys {
		name := k
		if r := []rune(name); len(r) > 200 {
			name = string(r[:200]) + "…"
		}
		v.Fields = append(v.Fields, kv{K: name, V: shortValue(a.Normalized.Fields[k])})
	}
	return v
}
