package config

import (
	"fmt"

	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
)

// MaxDocumentBytes bounds a context document's content, in UTF-8 bytes (API.md §5).
const MaxDocumentBytes = 1 << 20

// maxSeverityMappings bounds a source integration's severity_mapping.
const maxSeverityMappings = 100

// CheckRule checks what a new detection rule must hold beyond its fields' lengths: a name that is
// not blank and text PostgreSQL can store (validate.Errors.Text); locations are the field names.
func CheckRule(f RuleFields) validate.Errors {
	var errs validate.Errors
	errs.Name([]any{"name"}, f.Name)
	checkRuleText(&errs, map[string]*string{"source_rule_id": f.SourceRuleID, "source_name": f.SourceName,
		"run_frequency": f.RunFrequency, "created_by": f.CreatedBy, "documentation": f.Documentation},
		map[string][]string{"mitre_tactics": f.MitreTactics, "mitre_techniques": f.MitreTechniques,
			"mitre_subtechniques": f.MitreSubtechniques, "data_sources": f.DataSources})
	return errs
}

// CheckRulePatch is CheckRule for the fields a change sets.
func CheckRulePatch(p RulePatch) validate.Errors {
	var errs validate.Errors
	if p.Name != nil {
		errs.Name([]any{"name"}, *p.Name)
	}
	checkRuleText(&errs, map[string]*string{"source_rule_id": textSet(p.SourceRuleID), "source_name": textSet(p.SourceName),
		"run_frequency": textSet(p.RunFrequency), "documentation": textSet(p.Documentation)},
		map[string][]string{"mitre_tactics": deref(p.MitreTactics), "mitre_techniques": deref(p.MitreTechniques),
			"mitre_subtechniques": deref(p.MitreSubtechniques), "data_sources": deref(p.DataSources)})
	return errs
}

func checkRuleText(errs *validate.Errors, texts map[string]*string, lists map[string][]string) {
	for _, name := range []string{"source_rule_id", "source_name", "run_frequency", "created_by", "documentation"} {
		if p := texts[name]; p != nil {
			errs.Text([]any{name}, *p)
		}
	}
	for _, name := range []string{"mitre_tactics", "mitre_techniques", "mitre_subtechniques", "data_sources"} {
		for i, v := range lists[name] {
			errs.Text([]any{name, i}, v)
		}
	}
}

// textSet is the text a change sets, nil when it leaves or clears the field.
func textSet(v optional.Value[string]) *string {
	if v.Set && !v.Null {
		return &v.Value
	}
	return nil
}

func deref(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}

// CheckDocument checks what a new context document must hold beyond its fields' lengths: a title
// that is not blank, text PostgreSQL can store, content of at most MaxDocumentBytes.
func CheckDocument(f DocumentFields) validate.Errors {
	return checkDocument(&f.Title, f.Description, &f.Content, f.Tags)
}

// CheckDocumentPatch is CheckDocument for the fields a change sets.
func CheckDocumentPatch(p DocumentPatch) validate.Errors {
	return checkDocument(p.Title, textSet(p.Description), p.Content, p.Tags)
}

func checkDocument(title, description, content *string, tags []string) validate.Errors {
	var errs validate.Errors
	if title != nil {
		errs.Name([]any{"title"}, *title)
	}
	if description != nil {
		errs.Text([]any{"description"}, *description)
	}
	if content != nil {
		if len(*content) > MaxDocumentBytes {
			errs.AddCtx([]any{"content"}, validate.TypeStringTooLong, fmt.Sprintf("Content should have at most %d bytes.", MaxDocumentBytes),
				nil, map[string]any{"max_bytes": MaxDocumentBytes})
		} else {
			errs.Text([]any{"content"}, *content)
		}
	}
	for i, t := range tags {
		errs.Text([]any{"tags", i}, t)
	}
	return errs
}

// CheckSeverityMapping checks a source integration's severity_mapping (at most 100 entries, each
// a vendor value to a Vigil severity: sources.ValidateSeverityMapping); location "severity_mapping".
func CheckSeverityMapping(m map[string]string) validate.Errors {
	var errs validate.Errors
	if len(m) > maxSeverityMappings {
		errs.Add([]any{"severity_mapping"}, validate.TypeTooLong, "At most 100 severity mappings.", len(m))
		return errs
	}
	errs.Merge([]any{"severity_mapping"}, sources.ValidateSeverityMapping(m))
	return errs
}
