package sources

import (
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Splunk normalizes Splunk webhook alert action payloads.
type Splunk struct{}

// Name implements Plugin.
func (Splunk) Name() string { return SourceSplunk }

// DisplayName implements Plugin.
func (Splunk) DisplayName() string { return "Splunk" }

// DefaultAuthType implements Plugin.
func (Splunk) DefaultAuthType() string { return AuthSharedToken }

// SignatureHeader implements Plugin.
func (Splunk) SignatureHeader() string { return "X-Splunk-Webhook-Secret" }

// Documentation implements Plugin.
func (Splunk) Documentation() string {
	return "# Splunk\n\n" +
		"Point a saved search's Webhook alert action at `/v1/ingest/splunk`. Splunk posts " +
		"`{\"sid\", \"search_name\", \"app\", \"owner\", \"results_link\", \"result\": {...first result row...}}`.\n\n" +
		"Payload: title = `result.rule_name` (Splunk ES) else `search_name` (one of them required); " +
		"description = `result.rule_description`, `result.description` or `result.signature`; severity = " +
		"`result.urgency` else `result.severity` (informational/info, low, medium, high, critical, or 1-5: " +
		"1 Informational … 5 Critical; anything else → Pending); occurred_at = `result._time` (epoch seconds " +
		"or RFC 3339); tags = `result.tag`; detection rule = `search_name`. Indicators: `result.src_ip`, " +
		"`result.dest_ip`, `result.src` / `result.dest` (IP, else host name), `result.user`, `result.url`, " +
		"`result.domain`, `result.md5`, `result.sha1`, `result.sha256` (multivalue fields as arrays).\n\n" +
		"Authentication: the webhook URL cannot be signed by Splunk, so a shared token is expected in " +
		"`X-Splunk-Webhook-Secret: <secret>` (set it with a proxy or a custom alert action).\n"
}

// Normalize implements Plugin.
func (Splunk) Normalize(payload map[string]any) (Normalized, validate.Errors) {
	var errs validate.Errors
	var result map[string]any
	if v, ok := lookup(payload, "result"); ok {
		m, isObj := v.(map[string]any)
		if !isObj {
			errs.Add(loc("result"), validate.TypeObject, "must be an object", nil)
			return Normalized{}, errs
		}
		result = m
	}
	searchName := optString(payload, "search_name")
	title := optString(result, "rule_name")
	if title == "" {
		title = searchName
	}
	if title == "" {
		requiredString(payload, "search_name", &errs)
		if len(errs) == 0 { // search_name present but not usable (e.g. only spaces)
			errs.Add(loc("search_name"), validate.TypeStringTooShort, "must not be blank", nil)
		}
		return Normalized{}, errs
	}

	n := Normalized{Title: cleanTitle(title), Severity: SeverityPending}
	desc, _ := firstString(result, "rule_description", "description", "signature")
	n.Description = cleanDescription(desc)
	n.SourceSeverity, _ = firstString(result, "urgency", "severity")
	if sev, ok := severityByName(n.SourceSeverity); ok {
		n.Severity = sev
	} else if sev, ok := severityBySplunkNumber(n.SourceSeverity); ok {
		n.Severity = sev
	}
	if v, ok := lookup(result, "_time"); ok {
		if t, ok := parseTime(v, true); ok {
			n.OccurredAt = t
		}
	}
	n.Tags = cleanTags(stringsAt(result, "tag"))
	if ruleID := searchName; ruleID != "" {
		n.RuleRef = &RuleRef{SourceRuleID: ruleID, Name: ruleID}
	} else {
		n.RuleRef = &RuleRef{SourceRuleID: title, Name: title}
	}

	c := newCollector()
	c.both(indicators.FieldSrcIP, indicators.TypeIP, stringsAt(result, "src_ip")...)
	c.both(indicators.FieldDstIP, indicators.TypeIP, stringsAt(result, "dest_ip")...)
	for _, pair := range []struct{ key, ipField, hostField string }{
		{"src", indicators.FieldSrcIP, indicators.FieldSrcHostname},
		{"dest", indicators.FieldDstIP, indicators.FieldDstHostname},
	} {
		for _, v := range stringsAt(result, pair.key) {
			if isIP(v) {
				c.both(pair.ipField, indicators.TypeIP, v)
			} else {
				c.both(pair.hostField, indicators.TypeDomain, v)
			}
		}
	}
	for _, u := range stringsAt(result, "user") {
		c.both(indicators.FieldActorUsername, indicators.TypeAccount, u)
		if _, err := indicators.Normalize(indicators.TypeEmail, u); err == nil {
			c.both(indicators.FieldActorEmail, indicators.TypeEmail, u)
		}
	}
	c.both(indicators.FieldHTTPURL, indicators.TypeURL, stringsAt(result, "url")...)
	c.both(indicators.FieldDNSQuery, indicators.TypeDomain, stringsAt(result, "domain")...)
	c.both(indicators.FieldFileHashMD5, indicators.TypeMD5, stringsAt(result, "md5")...)
	c.both(indicators.FieldFileHashSHA1, indicators.TypeSHA1, stringsAt(result, "sha1")...)
	c.both(indicators.FieldFileHashSHA256, indicators.TypeSHA256, stringsAt(result, "sha256")...)
	n.Fields, n.Indicators = c.fields, c.inds
	return n, nil
}
