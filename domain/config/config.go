// Package config owns the rules of Vigil's configuration resources besides API keys (domain/apikeys),
// workflows and agents (domain/responses, domain/agents): detection rules, context documents,
// indicator mappings, source integrations, enrichment providers and field extractions. For each it
// decides the defaults, the normalisation of lists, the conflicts, and writes the change with its
// audit event in the change's own transaction (audit.Record), whichever door asked for it: the REST
// handlers only bind, call and map the result.
package config

import (
	"github.com/vigil-soc/vigil/kit/optional"
)

// Unique drops repeated elements, keeping the first occurrence; nil becomes empty.
func Unique(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// setNullable applies a nullable patch field to dst, adding column to cols when present.
func setNullable[T any](v optional.Value[T], dst **T, column string, cols []string) []string {
	if !v.Set {
		return cols
	}
	*dst = v.Ptr()
	return append(cols, column)
}
