package sources

import (
	"strings"
	"time"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

// maxGenericIndicators bounds the generic payload's indicators list.
const maxGenericIndicators = 1000

// Generic normalizes Vigil's own JSON alert shape, for sources without a dedicated plugin. Being our
// own contract, it is validated strictly: a field of the wrong JSON type is a validation error.
type Generic struct{}

// Name implements Plugin.
func (Generic) Name() string { return SourceGeneric }

// DisplayName implements Plugin.
func (Generic) DisplayName() string { return "Generic JSON" }

// DefaultAuthType implements Plugin.
func (Generic) DefaultAuthType() string { return AuthNone }

// SignatureHeader implements Plugin.
func (Generic) SignatureHeader() string { return "X-Vigil-Signature" }

// Documentation implements Plugin.
func (Generic) Documentation() string {
	return "# Generic JSON\n\n" +
		"POST to `/v1/ingest/generic`:\n\n" +
		"```json\n" +
		"{\"title\": \"...\", \"severity\": \"High\", \"occurred_at\": \"2026-01-02T03:04:05Z\",\n" +
		" \"description\": \"...\", \"tags\": [\"...\"], \"rule_id\": \"...\", \"rule_name\": \"...\",\n" +
		" \"indicators\": [{\"type\": \"ip\", \"value\": \"203.0.113.7\"}],\n" +
		" \"src_ip\": \"...\", \"dest_ip\": \"...\", \"domain\": \"...\", \"url\": \"...\", \"user\": \"...\",\n" +
		" \"email\": \"...\", \"md5\": \"...\", \"sha1\": \"...\", \"sha256\": \"...\"}\n" +
		"```\n\n" +
		"Only `title` is required. `severity` is an alert severity name (case-insensitive; unknown → " +
		"Pending); `occurred_at` is RFC 3339 with offset; an indicator without `type` has it inferred. " +
		"The flat indicator fields take a string or an array of strings. Wrong JSON types are rejected " +
		"with 422 naming the field.\n\n" +
		"Signature (when the integration has a secret): `X-Vigil-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` " +
		"(auth type hmac_sha256), or the secret itself (auth type shared_token).\n"
}

// Normalize implements Plugin.
func (Generic) Normalize(payload map[string]any) (Normalized, validate.Errors) {
	var errs validate.Errors
	n := Normalized{Severity: SeverityPending}
	n.Title = cleanTitle(requiredString(payload, "title", &errs))

	str := func(key string) string {
		v, ok := payload[key]
		if !ok || v == nil {
			return ""
		}
		s, isStr := v.(string)
		if !isStr {
			errs.Add([]any{key}, validate.TypeString, "must be a string", nil)
		}
		return strings.TrimSpace(s)
	}
	n.SourceSeverity = str("severity")
	if strings.EqualFold(n.SourceSeverity, string(SeverityPending)) {
		n.Severity = SeverityPending
	} else if sev, ok := severityByName(n.SourceSeverity); ok {
		n.Severity = sev
	}
	if s := str("occurred_at"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			errs.Add([]any{"occurred_at"}, validate.TypeDateTime, "must be an RFC 3339 timestamp with offset", s)
		} else {
			n.OccurredAt = t.UTC()
		}
	}
	n.Description = cleanDescription(str("description"))
	if id := str("rule_id"); id != "" {
		n.RuleRef = &RuleRef{SourceRuleID: id, Name: str("rule_name")}
	} else {
		str("rule_name") // still type-checked
	}
	n.Tags = cleanTags(stringList(payload, "tags", &errs))

	c := newCollector()
	c.inds = append(c.inds, genericIndicators(payload, &errs)...)
	for _, f := range genericFields() {
		c.both(f.field, f.typ, stringList(payload, f.key, &errs)...)
	}
	if len(errs) > 0 {
		return Normalized{}, errs
	}
	n.Fields, n.Indicators = c.fields, c.inds
	return n, nil
}

// genericFields maps the generic payload's flat fields to normalized fields and indicator types.
func genericFields() []struct {
	key, field string
	typ        indicators.Type
} {
	return []struct {
		key, field string
		typ        indicators.Type
	}{
		{"src_ip", indicators.FieldSrcIP, indicators.TypeIP},
		{"dest_ip", indicators.FieldDstIP, indicators.TypeIP},
		{"domain", indicators.FieldDNSQuery, indicators.TypeDomain},
		{"url", indicators.FieldHTTPURL, indicators.TypeURL},
		{"user", indicators.FieldActorUsername, indicators.TypeAccount},
		{"email", indicators.FieldActorEmail, indicators.TypeEmail},
		{"md5", indicators.FieldFileHashMD5, indicators.TypeMD5},
		{"sha1", indicators.FieldFileHashSHA1, indicators.TypeSHA1},
		{"sha256", indicators.FieldFileHashSHA256, indicators.TypeSHA256},
	}
}

// stringList reads key as a string or an array of strings; anything else is a validation error.
func stringList(payload map[string]any, key string, errs *validate.Errors) []string {
	switch v := payload[key].(type) {
	case nil:
		return nil
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				errs.Add([]any{key, i}, validate.TypeString, "must be a string", nil)
				continue
			}
			out = append(out, s)
		}
		return out
	default:
		errs.Add([]any{key}, validate.TypeList, "must be a string or an array of strings", nil)
		return nil
	}
}

func genericIndicators(payload map[string]any, errs *validate.Errors) []indicators.Indicator {
	raw, ok := payload["indicators"]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		errs.Add([]any{"indicators"}, validate.TypeList, "must be an array", nil)
		return nil
	}
	if len(list) > maxGenericIndicators {
		errs.AddCtx([]any{"indicators"}, validate.TypeTooLong, "too many indicators", nil,
			map[string]any{"max_length": maxGenericIndicators})
		return nil
	}
	var out []indicators.Indicator
	for i, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			errs.Add([]any{"indicators", i}, validate.TypeObject, "must be an object", nil)
			continue
		}
		value, ok := obj["value"].(string)
		if !ok {
			if obj["value"] == nil {
				errs.Add([]any{"indicators", i, "value"}, validate.TypeMissing, "field required", nil)
			} else {
				errs.Add([]any{"indicators", i, "value"}, validate.TypeString, "must be a string", nil)
			}
			continue
		}
		var typ indicators.Type
		switch t := obj["type"].(type) {
		case nil:
			inferred, ok := indicators.Infer(value)
			if !ok {
				errs.Add([]any{"indicators", i, "type"}, validate.TypeMissing,
					"type is required when it cannot be inferred from the value", nil)
				continue
			}
			typ = inferred
		case string:
			parsed, err := indicators.ParseType(t)
			if err != nil {
				errs.AddCtx([]any{"indicators", i, "type"}, validate.TypeEnum, "unknown indicator type", t,
					map[string]any{"allowed": indicators.Types()})
				continue
			}
			typ = parsed
		default:
			errs.Add([]any{"indicators", i, "type"}, validate.TypeString, "must be a string", nil)
			continue
		}
		out = append(out, indicators.Indicator{Type: typ, Value: value})
	}
	return out
}
