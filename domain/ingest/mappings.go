package ingest

import (
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// The rules of indicator mappings as configured through a front door: a valid definition, and
// system mappings that only change is_active and description.

// ValidateMapping checks a mapping's definition (field path syntax, indicator type, extraction
// target; no NUL character in the field path or the description), located at its field names.
func ValidateMapping(fieldPath, indicatorType, target string, description *string) validate.Errors {
	m := indicators.Mapping{FieldPath: fieldPath, Type: indicators.Type(indicatorType), Target: indicators.Target(target)}
	errs := m.Validate()
	if strings.IndexByte(fieldPath, 0) >= 0 {
		errs.Add([]any{"field_path"}, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	if description != nil && strings.IndexByte(*description, 0) >= 0 {
		errs.Add([]any{"description"}, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	return errs
}

// MappingFixedFields are the fields of a system mapping that cannot change, and "delete": a
// system mapping cannot be deleted either (CheckMappingChange(m, []string{"delete"})).
var MappingFixedFields = []string{"source_name", "field_path", "indicator_type", "extraction_target", "delete"}

// SystemMappingError: a change names Fields a system mapping does not let change ("delete" for a
// deletion) — 422 SYSTEM_MAPPING_READONLY.
type SystemMappingError struct{ Fields []string }

func (e *SystemMappingError) Error() string {
	return "system mappings are read-only except is_active and description: " + strings.Join(e.Fields, ", ")
}

// CheckMappingChange refuses, for a system mapping m, a change setting any of MappingFixedFields
// (*SystemMappingError listing them, in the order given).
func CheckMappingChange(m store.IndicatorMapping, fields []string) error {
	if fixed := validate.Among(fields, MappingFixedFields); m.IsSystem && len(fixed) > 0 {
		return &SystemMappingError{Fields: fixed}
	}
	return nil
}
