package sources

import (
	"github.com/vigil-soc/vigil/kit/indicators"
)

// Splunk normalizes Splunk alert-action webhooks (with or without a search_name), their result rows
// with Splunk CIM field names, and Enterprise Security notables (in a webhook's result or posted flat).
type Splunk struct{}

// Name implements Plugin.
func (Splunk) Name() string { return SourceSplunk }

// DisplayName implements Plugin.
func (Splunk) DisplayName() string { return "Splunk" }

// DefaultAuthType implements Plugin.
func (Splunk) DefaultAuthType() string { return AuthSharedToken }

// SignatureHeader implements Plugin.
func (Splunk) SignatureHeader() string { return "X-Splunk-Webhook-Secret" }

// Candidate keys of the Splunk plugin, in order (docs/SOURCES.md). Keys without "result." are read on
// the payload; "result." keys on the result row (the payload itself when it has no result object).
var (
	splunkTitleKeys = []string{"result.rule_name", "result.rule_title", "search_name", "result.search_name",
		"result.savedsearch_name", "result.signature", "result.alert_name"}
	splunkDescKeys     = []string{"result.rule_description", "result.description", "result.signature"}
	splunkSeverityKeys = []string{"result.urgency", "result.severity", "result.priority"}
	splunkTimeKeys     = []string{"result._time", "result.orig_time", "result.firstTime", "result.time"}
)

// splunkCIM maps CIM field names of a result row to normalized fields and indicator types; src, dest
// and their host variants are IPs when they parse as one, host names otherwise.
var splunkCIM = []struct {
	key, field string
	typ        indicators.Type
}{
	{"src_ip", indicators.FieldSrcIP, indicators.TypeIP},
	{"dest_ip", indicators.FieldDstIP, indicators.TypeIP},
	{"url", indicators.FieldHTTPURL, indicators.TypeURL},
	{"domain", indicators.FieldDNSQuery, indicators.TypeDomain},
	{"query", indicators.FieldDNSQuery, indicators.TypeDomain},
	{"md5", indicators.FieldFileHashMD5, indicators.TypeMD5},
	{"sha1", indicators.FieldFileHashSHA1, indicators.TypeSHA1},
	{"sha256", indicators.FieldFileHashSHA256, indicators.TypeSHA256},
	{"sender", indicators.FieldEmailFrom, indicators.TypeEmail},
	{"src_user_email", indicators.FieldActorEmail, indicators.TypeEmail},
	{"recipient", "", indicators.TypeEmail},
}

// Documentation implements Plugin.
func (Splunk) Documentation() string {
	return "# Splunk\n\n" +
		"Point a saved search's Webhook alert action at `/v1/ingest/splunk`. Splunk posts " +
		"`{\"sid\", \"search_name\", \"app\", \"owner\", \"results_link\", \"result\": {...first result row...}}`; " +
		"`search_name` may be null or missing. An Enterprise Security notable may be posted flat (its fields " +
		"are then read as the result row); a notable event of `index=notable` is titled by its `source` (the " +
		"correlation search) when no candidate key is there. No object is refused for its shape.\n\n" +
		"Title: the first of " + backticks(splunkTitleKeys) + "; description: " + backticks(splunkDescKeys) +
		"; severity: " + backticks(splunkSeverityKeys) + " (words, or Splunk's 1-6: 1 Informational, 2 Low, " +
		"3 Medium, 4 High, 5-6 Critical); occurred_at: " + backticks(splunkTimeKeys) + " (epoch seconds or " +
		"RFC 3339); tags: `result.tag`, `result.security_domain`; detection rule: `search_name`, else the title.\n\n" +
		"Indicators from the CIM fields of the result: `src`, `dest`, `src_host`, `dest_host`, `dvc` (IP, else " +
		"host name), `src_ip`, `dest_ip`, `user`, `src_user` (accounts; e-mail addresses too), `url`, `domain`, " +
		"`query`, `file_hash` (by length), `md5`, `sha1`, `sha256`, `sender`, `recipient` (multivalue fields " +
		"as arrays), and the vendor field names the generic plugin knows (`srcip`, `username`, `SHA256String`…) at " +
		"any depth; `process` is kept as `process_command_line`.\n\n" +
		"Authentication: the webhook URL cannot be signed by Splunk, so a shared token is expected in " +
		"`X-Splunk-Webhook-Secret: <secret>` (set it with a proxy or a custom alert action).\n"
}

// Normalize implements Plugin.
func (Splunk) Normalize(payload map[string]any) Normalized {
	n := Normalized{Severity: SeverityPending}
	result := payload
	if v, ok := lookup(payload, "result"); ok {
		if m, isObj := v.(map[string]any); isObj {
			result = m
		} else {
			n.note("result", "is "+kindOf(v)+", not an object; the payload's own fields are read as the result")
		}
	}
	// view reads "result.x" on the result row and other keys on the payload.
	view := map[string]any{"result": result}
	for k, v := range payload {
		if k != "result" {
			view[k] = v
		}
	}
	title, _ := pickText(&n, view, splunkTitleKeys...)
	if idx, _ := result["index"].(string); title == "" && idx == "notable" {
		// An Enterprise Security notable read from index=notable: its source is the correlation search.
		title, _ = pickText(&n, view, "result.source")
	}
	n.Title = cleanTitle(title)
	desc, _ := pickText(&n, view, splunkDescKeys...)
	n.Description = cleanDescription(desc)
	n.SourceSeverity, _ = pickText(&n, view, splunkSeverityKeys...)
	if sev, ok := severityByName(n.SourceSeverity); ok {
		n.Severity = sev
	} else if sev, ok := severityBySplunkNumber(n.SourceSeverity); ok {
		n.Severity = sev
	}
	pickTime(&n, view, splunkTimeKeys...)
	n.Tags = cleanTags(append(stringsAt(result, "tag"), stringsAt(result, "security_domain")...))
	if searchName, _ := pickText(&n, view, "search_name", "result.savedsearch_name"); searchName != "" {
		searchName = truncateRunes(searchName, MaxTitleLen)
		n.RuleRef = &RuleRef{SourceRuleID: searchName, Name: searchName}
	} else if n.Title != "" {
		n.RuleRef = &RuleRef{SourceRuleID: n.Title, Name: n.Title}
	}

	c := newCollector()
	for _, f := range splunkCIM {
		vals := stringsAt(result, f.key)
		if f.field == "" {
			c.indicator(f.typ, vals...)
		} else {
			c.both(f.field, f.typ, vals...)
		}
	}
	for _, pair := range []struct{ key, ipField, hostField string }{
		{"src", indicators.FieldSrcIP, indicators.FieldSrcHostname},
		{"src_host", indicators.FieldSrcIP, indicators.FieldSrcHostname},
		{"dest", indicators.FieldDstIP, indicators.FieldDstHostname},
		{"dest_host", indicators.FieldDstIP, indicators.FieldDstHostname},
		{"dvc", indicators.FieldDstIP, indicators.FieldDstHostname},
	} {
		for _, v := range stringsAt(result, pair.key) {
			switch {
			case isIP(v):
				c.both(pair.ipField, indicators.TypeIP, v)
			case looksLikeHost(v):
				c.both(pair.hostField, indicators.TypeDomain, v)
			} // else a machine name (or a redacted value): not a domain, and not a hostname field pass 2 would read as one
		}
	}
	for _, key := range []string{"user", "src_user"} {
		for _, u := range stringsAt(result, key) {
			c.both(indicators.FieldActorUsername, indicators.TypeAccount, u)
			if _, err := indicators.Normalize(indicators.TypeEmail, u); err == nil {
				c.both(indicators.FieldActorEmail, indicators.TypeEmail, u)
			}
		}
	}
	for _, h := range stringsAt(result, "file_hash") {
		if t, ok := indicators.Infer(h); ok && (t == indicators.TypeMD5 || t == indicators.TypeSHA1 || t == indicators.TypeSHA256) {
			c.both(hashField(t), t, h)
		}
	}
	c.field(FieldProcessCommandLine, stringsAt(result, "process")...)
	// Fields outside the CIM (srcip, username, ...) under the names vendors give them (genericKeys).
	walk(result, func(path []string, v any, parent map[string]any) { genericKeyed(c, path, v, parent) })
	n.Fields, n.Indicators = c.fields, c.inds
	return n
}

// hashField is the normalized field of a hash type.
func hashField(t indicators.Type) string {
	switch t {
	case indicators.TypeMD5:
		return indicators.FieldFileHashMD5
	case indicators.TypeSHA1:
		return indicators.FieldFileHashSHA1
	default:
		return indicators.FieldFileHashSHA256
	}
}
