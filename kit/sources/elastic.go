package sources

import (
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Elastic normalizes Elastic Security (Kibana) alert documents, flat dotted keys or nested objects.
type Elastic struct{}

// Name implements Plugin.
func (Elastic) Name() string { return SourceElastic }

// DisplayName implements Plugin.
func (Elastic) DisplayName() string { return "Elastic Security" }

// DefaultAuthType implements Plugin.
func (Elastic) DefaultAuthType() string { return AuthHMACSHA256 }

// SignatureHeader implements Plugin.
func (Elastic) SignatureHeader() string { return "X-Elastic-Signature" }

// Documentation implements Plugin.
func (Elastic) Documentation() string {
	return "# Elastic Security\n\n" +
		"POST the Kibana alert document (e.g. from a Webhook connector action with `{{context.alerts}}` " +
		"items, or a document read from `.alerts-security.alerts-*`) to `/v1/ingest/elastic`. Keys may be " +
		"flat and dotted (`\"kibana.alert.rule.name\"`) or nested objects.\n\n" +
		"Payload: `kibana.alert.rule.name` (required, title; `rule.name` accepted), `kibana.alert.reason` " +
		"(description; else `kibana.alert.rule.description`), `kibana.alert.rule.severity` or " +
		"`kibana.alert.severity` (low, medium, high, critical), else `kibana.alert.rule.risk_score` / " +
		"`kibana.alert.risk_score` (0-21 Low, 22-47 Medium, 48-73 High, 74-100 Critical), " +
		"`kibana.alert.rule.tags` (tags), `kibana.alert.original_time` or `@timestamp` (occurred_at), " +
		"`kibana.alert.rule.uuid` (else `rule_id`) and name (detection rule). Indicators from ECS fields: " +
		"`source.ip`, `destination.ip`, `host.ip`, `source.domain`, `destination.domain`, `host.name`, " +
		"`dns.question.name`, `url.full`/`url.original`, `url.domain`, `file.hash.*`, `process.hash.*`, " +
		"`user.name`, `user.email`, `email.from.address`, `email.reply_to.address`, `threat.indicator.*` " +
		"and `threat.enrichments[].indicator.*`.\n\n" +
		"Signature: `X-Elastic-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (prefix optional).\n"
}

// Normalize implements Plugin.
func (Elastic) Normalize(payload map[string]any) (Normalized, validate.Errors) {
	var errs validate.Errors
	title, _ := firstString(payload, "kibana.alert.rule.name", "rule.name")
	if title == "" {
		title = requiredString(payload, "kibana.alert.rule.name", &errs)
	}
	if len(errs) > 0 {
		return Normalized{}, errs
	}
	n := Normalized{Title: cleanTitle(title), Severity: SeverityPending}
	desc, _ := firstString(payload, "kibana.alert.reason", "kibana.alert.rule.description")
	n.Description = cleanDescription(desc)

	word, _ := firstString(payload, "kibana.alert.rule.severity", "kibana.alert.severity")
	score, _ := firstString(payload, "kibana.alert.rule.risk_score", "kibana.alert.risk_score")
	n.SourceSeverity = word
	if word == "" {
		n.SourceSeverity = score
	}
	if sev, ok := severityByName(word); ok {
		n.Severity = sev
	} else if f, err := strconv.ParseFloat(score, 64); err == nil {
		if sev, ok := severityByRiskScore(f); ok {
			n.Severity = sev
		}
	}
	n.Tags = cleanTags(stringsAt(payload, "kibana.alert.rule.tags"))
	n.OccurredAt = firstTime(payload, false, "kibana.alert.original_time", "@timestamp")
	if id, _ := firstString(payload, "kibana.alert.rule.uuid", "kibana.alert.rule.rule_id", "rule.id"); id != "" {
		n.RuleRef = &RuleRef{SourceRuleID: id, Name: n.Title}
	}

	c := newCollector()
	c.both(indicators.FieldSrcIP, indicators.TypeIP, stringsAt(payload, "source.ip")...)
	c.both(indicators.FieldDstIP, indicators.TypeIP, stringsAt(payload, "destination.ip")...)
	c.indicator(indicators.TypeIP, stringsAt(payload, "host.ip")...)
	c.both(indicators.FieldSrcHostname, indicators.TypeDomain, stringsAt(payload, "source.domain")...)
	c.both(indicators.FieldDstHostname, indicators.TypeDomain, stringsAt(payload, "destination.domain")...)
	for _, h := range stringsAt(payload, "host.name") {
		if strings.Contains(h, ".") && !isIP(h) {
			c.both(indicators.FieldSrcHostname, indicators.TypeDomain, h) // FQDN host names only
		}
	}
	c.both(indicators.FieldDNSQuery, indicators.TypeDomain, stringsAt(payload, "dns.question.name")...)
	if u, _ := firstString(payload, "url.full", "url.original"); u != "" {
		c.both(indicators.FieldHTTPURL, indicators.TypeURL, u)
	}
	c.both(indicators.FieldHTTPHostname, indicators.TypeDomain, stringsAt(payload, "url.domain")...)
	for _, prefix := range []string{"file.hash", "process.hash"} {
		c.both(indicators.FieldFileHashMD5, indicators.TypeMD5, stringsAt(payload, prefix+".md5")...)
		c.both(indicators.FieldFileHashSHA1, indicators.TypeSHA1, stringsAt(payload, prefix+".sha1")...)
		c.both(indicators.FieldFileHashSHA256, indicators.TypeSHA256, stringsAt(payload, prefix+".sha256")...)
	}
	c.both(indicators.FieldActorUsername, indicators.TypeAccount, stringsAt(payload, "user.name")...)
	c.both(indicators.FieldActorEmail, indicators.TypeEmail, stringsAt(payload, "user.email")...)
	c.both(indicators.FieldEmailFrom, indicators.TypeEmail, stringsAt(payload, "email.from.address")...)
	c.both(indicators.FieldEmailReplyTo, indicators.TypeEmail, stringsAt(payload, "email.reply_to.address")...)

	tis := threatIndicators(payload)
	for _, ti := range tis {
		elasticThreatIndicator(c, ti, "")
	}
	if len(tis) == 0 { // flat document: "threat.indicator.ip" and friends are top-level keys
		elasticThreatIndicator(c, payload, "threat.indicator.")
	}
	n.Fields, n.Indicators = c.fields, c.inds
	return n, nil
}

// threatIndicators returns the ECS threat indicator objects: threat.indicator (an object or an array)
// and threat.enrichments[].indicator.
func threatIndicators(payload map[string]any) []any {
	var out []any
	for _, v := range fieldpath.Get(payload, "threat.indicator") {
		if arr, ok := v.([]any); ok {
			out = append(out, arr...)
		} else {
			out = append(out, v)
		}
	}
	out = append(out, fieldpath.Get(payload, "threat.enrichments.*.indicator")...)
	if len(out) > maxEntities {
		out = out[:maxEntities]
	}
	return out
}

// elasticThreatIndicator reads one ECS threat indicator object; prefix is prepended to its field names.
func elasticThreatIndicator(c *collector, ti any, prefix string) {
	if _, ok := ti.(map[string]any); !ok {
		return
	}
	c.indicator(indicators.TypeIP, stringsAt(ti, prefix+"ip")...)
	c.indicator(indicators.TypeDomain, stringsAt(ti, prefix+"url.domain")...)
	c.indicator(indicators.TypeURL, stringsAt(ti, prefix+"url.full")...)
	c.indicator(indicators.TypeURL, stringsAt(ti, prefix+"url.original")...)
	c.indicator(indicators.TypeEmail, stringsAt(ti, prefix+"email.address")...)
	c.indicator(indicators.TypeMD5, stringsAt(ti, prefix+"file.hash.md5")...)
	c.indicator(indicators.TypeSHA1, stringsAt(ti, prefix+"file.hash.sha1")...)
	c.indicator(indicators.TypeSHA256, stringsAt(ti, prefix+"file.hash.sha256")...)
	c.indicator(indicators.TypeDomain, stringsAt(ti, prefix+"domain")...)
}
