package sources

import (
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// Elastic normalizes Elastic Security documents: 8.x alerts (kibana.alert.*), 7.x signals
// (signal.*), plain ECS events and Elastic Defend alerts, flat dotted keys or nested objects.
type Elastic struct{}

// Name implements Plugin.
func (Elastic) Name() string { return SourceElastic }

// DisplayName implements Plugin.
func (Elastic) DisplayName() string { return "Elastic Security" }

// DefaultAuthType implements Plugin.
func (Elastic) DefaultAuthType() string { return AuthHMACSHA256 }

// SignatureHeader implements Plugin.
func (Elastic) SignatureHeader() string { return "X-Elastic-Signature" }

// Candidate keys of the Elastic plugin, in order (docs/SOURCES.md).
var (
	elasticTitleKeys = []string{"kibana.alert.rule.name", "signal.rule.name", "rule.name", "message", "event.action",
		"event.dataset"}
	elasticDescKeys = []string{"kibana.alert.reason", "signal.reason", "kibana.alert.rule.description",
		"signal.rule.description", "rule.description", "message"}
	elasticWordKeys  = []string{"kibana.alert.rule.severity", "kibana.alert.severity", "signal.rule.severity"}
	elasticScoreKeys = []string{"kibana.alert.rule.risk_score", "kibana.alert.risk_score", "signal.rule.risk_score",
		"event.risk_score", "event.severity"}
	elasticTimeKeys = []string{"kibana.alert.original_time", "signal.original_time", "@timestamp", "event.created"}
	elasticRuleKeys = []string{"kibana.alert.rule.uuid", "kibana.alert.rule.rule_id", "signal.rule.id",
		"signal.rule.rule_id", "rule.id", "rule.uuid"}
	elasticTagKeys = []string{"kibana.alert.rule.tags", "signal.rule.tags", "tags"}
)

// Documentation implements Plugin.
func (Elastic) Documentation() string {
	return "# Elastic Security\n\n" +
		"POST an Elastic Security alert document (8.x `kibana.alert.*`, e.g. from a Webhook connector action " +
		"with `{{context.alerts}}` items or read from `.alerts-security.alerts-*`), a 7.x signal (`signal.*`), " +
		"an ECS event or an Elastic Defend alert to `/v1/ingest/elastic`. Keys may be flat and dotted " +
		"(`\"kibana.alert.rule.name\"`) or nested objects. No object is refused for its shape.\n\n" +
		"Title: the first of " + backticks(elasticTitleKeys) + "; description: " + backticks(elasticDescKeys) +
		"; severity: a word at " + backticks(elasticWordKeys) + ", else a 0-100 risk score at " +
		backticks(elasticScoreKeys) + " (0-21 Low, 22-47 Medium, 48-73 High, 74-100 Critical); occurred_at: " +
		backticks(elasticTimeKeys) + "; tags: " + backticks(elasticTagKeys) + "; detection rule: " +
		backticks(elasticRuleKeys) + ".\n\n" +
		"Indicators from the ECS fields at any depth: `source|client.ip|domain`, `destination|server.ip|domain`, " +
		"`host.ip`, `host.name` (FQDNs), `related.ip`, `dns.question.name`, `url.full|original|domain`, every " +
		"`*.hash.md5|sha1|sha256` (`file.hash`, `process.hash`, `process.parent.hash`, `dll.hash`…), " +
		"`user.name`, `user.email`, `email.from|to|sender|reply_to.address`, `threat.indicator.*` and " +
		"`threat.enrichments[].indicator.*`; `process.command_line` is kept as `process_command_line`.\n\n" +
		"Signature: `X-Elastic-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (prefix optional).\n"
}

// Normalize implements Plugin.
func (Elastic) Normalize(payload map[string]any) Normalized {
	n := Normalized{Severity: SeverityPending}
	title, at := pickText(&n, payload, elasticTitleKeys...)
	if at == "message" || at == "summary" {
		title = firstLine(title) // free text: its first line is the title
	}
	n.Title = cleanTitle(title)
	desc, _ := pickText(&n, payload, elasticDescKeys...)
	n.Description = cleanDescription(desc)

	word, _ := pickText(&n, payload, elasticWordKeys...)
	score, _ := pickText(&n, payload, elasticScoreKeys...)
	n.SourceSeverity = word
	if word == "" {
		n.SourceSeverity = score
	}
	if sev, ok := severityByName(word); ok {
		n.Severity = sev
	} else if f, ok := numberOrText(score); ok {
		if sev, ok := severityByRiskScore(f); ok {
			n.Severity = sev
			n.SourceSeverity = score
		}
	}
	var tags []string
	for _, k := range elasticTagKeys {
		tags = append(tags, stringsAt(payload, k)...)
	}
	n.Tags = cleanTags(tags)
	pickTime(&n, payload, elasticTimeKeys...)
	if id, _ := pickText(&n, payload, elasticRuleKeys...); id != "" {
		n.RuleRef = &RuleRef{SourceRuleID: truncateRunes(id, MaxTitleLen), Name: n.Title}
	}

	c := newCollector()
	walk(payload, func(path []string, v any, _ map[string]any) { elasticField(c, path, v) })
	n.Fields, n.Indicators = c.fields, c.inds
	return n
}

// pathRule maps a field (by the suffix of its path: ECS, OCSF) to a normalized field and an indicator
// type.
type pathRule struct {
	suffix string
	field  string // "" = indicator only
	typ    indicators.Type
	fqdn   bool // host-name fields: only values that look like an FQDN (looksLikeHost)
}

// elasticRules are checked in order; the first suffix that matches a path wins.
var elasticRules = []pathRule{
	{"hash.md5", indicators.FieldFileHashMD5, indicators.TypeMD5, false},
	{"hash.sha1", indicators.FieldFileHashSHA1, indicators.TypeSHA1, false},
	{"hash.sha256", indicators.FieldFileHashSHA256, indicators.TypeSHA256, false},
	{"indicator.ip", "", indicators.TypeIP, false},
	{"indicator.domain", "", indicators.TypeDomain, false},
	{"indicator.url.full", "", indicators.TypeURL, false},
	{"indicator.url.original", "", indicators.TypeURL, false},
	{"indicator.url.domain", "", indicators.TypeDomain, false},
	{"indicator.email.address", "", indicators.TypeEmail, false},
	{"source.ip", indicators.FieldSrcIP, indicators.TypeIP, false},
	{"client.ip", indicators.FieldSrcIP, indicators.TypeIP, false},
	{"destination.ip", indicators.FieldDstIP, indicators.TypeIP, false},
	{"server.ip", indicators.FieldDstIP, indicators.TypeIP, false},
	{"host.ip", "", indicators.TypeIP, false},
	{"related.ip", "", indicators.TypeIP, false},
	{"source.domain", indicators.FieldSrcHostname, indicators.TypeDomain, false},
	{"client.domain", indicators.FieldSrcHostname, indicators.TypeDomain, false},
	{"destination.domain", indicators.FieldDstHostname, indicators.TypeDomain, false},
	{"server.domain", indicators.FieldDstHostname, indicators.TypeDomain, false},
	{"host.name", indicators.FieldSrcHostname, indicators.TypeDomain, true},
	{"host.hostname", indicators.FieldSrcHostname, indicators.TypeDomain, true},
	{"dns.question.name", indicators.FieldDNSQuery, indicators.TypeDomain, false},
	{"url.full", indicators.FieldHTTPURL, indicators.TypeURL, false},
	{"url.original", indicators.FieldHTTPURL, indicators.TypeURL, false},
	{"url.domain", indicators.FieldHTTPHostname, indicators.TypeDomain, false},
	{"user.name", indicators.FieldActorUsername, indicators.TypeAccount, false},
	{"user.email", indicators.FieldActorEmail, indicators.TypeEmail, false},
	{"email.from.address", indicators.FieldEmailFrom, indicators.TypeEmail, false},
	{"email.sender.address", indicators.FieldEmailFrom, indicators.TypeEmail, false},
	{"email.reply_to.address", indicators.FieldEmailReplyTo, indicators.TypeEmail, false},
	{"email.to.address", "", indicators.TypeEmail, false},
	{"process.command_line", FieldProcessCommandLine, "", false},
}

// elasticField applies the first matching elasticRules entry to one leaf of the document. Leaves under
// kibana.alert.rule or signal.rule (the rule's own definition: its query, its threat mapping), under
// Elastic Defend's policy (artifact hashes) and its call_stack_* modules are not the alert's indicators.
func elasticField(c *collector, path []string, v any) {
	if len(path) >= 3 && (strings.EqualFold(path[0], "kibana") && strings.EqualFold(path[1], "alert") && strings.EqualFold(path[2], "rule") ||
		strings.EqualFold(path[0], "signal") && strings.EqualFold(path[1], "rule")) ||
		len(path) >= 2 && strings.EqualFold(path[0], "Endpoint") && strings.EqualFold(path[1], "policy") {
		return
	}
	for _, seg := range path {
		if strings.HasPrefix(seg, "call_stack") { // Defend's call-stack modules: system DLLs, not the alert's
			return
		}
	}
	s, ok := scalarText(v)
	if !ok {
		return
	}
	if s = strings.TrimSpace(s); s == "" {
		return
	}
	applyPathRules(c, elasticRules, path, s)
}

// applyPathRules applies the first rule of rules whose suffix ends path to the leaf's text s: a
// normalized field, a pass-1 candidate or both (host-name rules only for what looks like an FQDN).
func applyPathRules(c *collector, rules []pathRule, path []string, s string) {
	for _, r := range rules {
		if !hasSuffix(path, r.suffix) {
			continue
		}
		if r.fqdn && !looksLikeHost(s) {
			return
		}
		switch {
		case r.typ == "":
			c.field(r.field, s)
		case r.field == "":
			c.indicator(r.typ, s)
		default:
			c.both(r.field, r.typ, s)
		}
		return
	}
}
