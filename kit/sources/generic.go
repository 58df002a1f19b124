package sources

import (
	"fmt"
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
)

// maxGenericIndicators bounds the generic payload's indicators list (further elements are ignored
// and noted).
const maxGenericIndicators = 1000

// Generic normalizes any JSON object: Vigil's own shape ({title, severity, indicators[], src_ip…},
// whose fields keep their meaning) and the alerts of products without a dedicated plugin
// (CrowdStrike, GuardDuty, Security Hub, TheHive, Wazuh, Suricata, SentinelOne, Okta, Google SCC…),
// read through documented candidate keys. A field of the wrong JSON type is ignored and noted.
type Generic struct{}

// Name implements Plugin.
func (Generic) Name() string { return SourceGeneric }

// DisplayName implements Plugin.
func (Generic) DisplayName() string { return "Generic JSON" }

// DefaultAuthType implements Plugin.
func (Generic) DefaultAuthType() string { return AuthNone }

// SignatureHeader implements Plugin.
func (Generic) SignatureHeader() string { return "X-Vigil-Signature" }

// Candidate keys of the generic plugin, in order (docs/SOURCES.md). They are read on the alert object:
// the payload, or an AWS EventBridge event's detail (and its findings[0], for Security Hub).
var (
	genericTitleKeys = []string{"title", "Title", "alert_title", "alertDisplayName", "AlertName", "displayName",
		"display_name", "DisplayName", "rule.name", "rule_name", "rule.description", "rule", "alert.signature",
		"threatInfo.threatName", "detect_name", "DetectName", "event.DetectName", "event.Name", "finding.category", "displayMessage",
		"name", "Name", "type", "Type", "event.action", "eventName", "summary", "message"}
	genericDescKeys = []string{"description", "Description", "DetectDescription", "detect_description",
		"event.DetectDescription", "event.Description", "full_log", "output", "finding.description", "details", "summary", "message"}
	genericSeverityKeys = []string{"severity", "Severity", "severity_name", "SeverityName", "max_severity_displayname",
		"event.SeverityName", "event.Severity", "Severity.Label", "finding.severity", "alert.severity", "rule.level",
		"priority", "urgency", "level"}
	genericTimeKeys = []string{"occurred_at", "timestamp", "@timestamp", "time", "Time", "eventTime", "event_time",
		"createdAt", "created_at", "CreatedAt", "creationTime", "creation_time", "created", "_createdAt", "published",
		"date", "first_behavior", "detection_timestamp", "local_insert_ts", "start_time", "messageTime", "clickTime",
		"metadata.eventCreationTime", "finding.eventTime", "finding.createTime", "threatInfo.createdAt", "updatedAt", "UpdatedAt"}
	genericRuleIDKeys   = []string{"rule_id", "rule.id", "ruleId", "alert.signature_id"}
	genericRuleNameKeys = []string{"rule_name", "rule.name", "rule.description", "alert.signature"}
	genericTagKeys      = []string{"tags", "Tags", "rule.groups"}
)

// genericFlat maps the generic shape's flat fields to normalized fields and indicator types.
var genericFlat = []struct {
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

// Documentation implements Plugin.
func (Generic) Documentation() string {
	return "# Generic JSON\n\n" +
		"POST any JSON object to `/v1/ingest/generic`. Vigil's own shape:\n\n" +
		"```json\n" +
		"{\"title\": \"...\", \"severity\": \"High\", \"occurred_at\": \"2026-01-02T03:04:05Z\",\n" +
		" \"description\": \"...\", \"tags\": [\"...\"], \"rule_id\": \"...\", \"rule_name\": \"...\",\n" +
		" \"indicators\": [{\"type\": \"ip\", \"value\": \"203.0.113.7\"}],\n" +
		" \"src_ip\": \"...\", \"dest_ip\": \"...\", \"domain\": \"...\", \"url\": \"...\", \"user\": \"...\",\n" +
		" \"email\": \"...\", \"md5\": \"...\", \"sha1\": \"...\", \"sha256\": \"...\"}\n" +
		"```\n\n" +
		"Other products' alerts are read through candidate keys, first match wins (an AWS EventBridge event " +
		"is read at its `detail`, a Security Hub event at `detail.findings[0]`). Title: " + backticks(genericTitleKeys) +
		"; description: " + backticks(genericDescKeys) + "; severity: " + backticks(genericSeverityKeys) +
		" (a word; a number by the recognized shape: GuardDuty 0-10, TheHive 1-4, Wazuh `rule.level` 0-15, " +
		"Suricata `alert.severity` 1-4, else 0-10 as CVSS and 11-100 as a risk score); occurred_at: " +
		backticks(genericTimeKeys) + " (RFC 3339, without an offset read as UTC, or epoch s/ms/µs/ns); rule: " +
		backticks(genericRuleIDKeys) + " named by " + backticks(genericRuleNameKeys) + "; tags: " +
		backticks(genericTagKeys) + ". A field of the wrong JSON type is ignored and listed in " +
		"normalization_notes; nothing is refused. An indicator without `type` has it inferred.\n\n" +
		"Signature (when the integration has a secret): `X-Vigil-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` " +
		"(auth type hmac_sha256), or the secret itself (auth type shared_token).\n"
}

// genericShape is the product shape a generic payload is recognized as; it decides how a numeric
// severity is read.
type genericShape int

const (
	shapeOther genericShape = iota
	shapeGuardDuty
	shapeTheHive
	shapeWazuh
	shapeSuricata
)

// genericAlertObject is the object the candidate keys are read on: an AWS EventBridge event's detail
// (a Security Hub event's first finding), an Okta event hook's first event, else the payload.
func genericAlertObject(payload map[string]any) (map[string]any, string) {
	if evs, ok := lookupOrNil(payload, "data.events").([]any); ok && len(evs) > 0 {
		if ev, ok := evs[0].(map[string]any); ok {
			return ev, "data.events[0]"
		}
	}
	src, _ := payload["source"].(string)
	detail, ok := payload["detail"].(map[string]any)
	if !ok || !strings.HasPrefix(src, "aws.") {
		return payload, ""
	}
	if fs, ok := detail["findings"].([]any); ok && len(fs) > 0 {
		if f, ok := fs[0].(map[string]any); ok {
			return f, "detail.findings[0]"
		}
	}
	return detail, "detail"
}

func recognize(obj map[string]any, payload map[string]any) genericShape {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := lookup(obj, k); ok {
				return true
			}
		}
		return false
	}
	if src, _ := payload["source"].(string); src == "aws.guardduty" ||
		has("service", "Service") && has("resource", "Resource") && has("type", "Type") && has("accountId", "AccountId") {
		return shapeGuardDuty
	}
	if t, _ := obj["_type"].(string); strings.EqualFold(t, "alert") || strings.EqualFold(t, "case") ||
		has("sourceRef") && has("tlp") {
		return shapeTheHive
	}
	if has("rule.level") && has("agent", "manager", "decoder") {
		return shapeWazuh
	}
	if et, _ := obj["event_type"].(string); et == "alert" && has("alert.signature") {
		return shapeSuricata
	}
	return shapeOther
}

// genericSeverity reads the severity candidates in order: a word maps by severity.FromWord, a number
// by the recognized shape's scale. The first candidate present is the source severity (the key of the
// integration's severity_mapping).
func genericSeverity(n *Normalized, obj map[string]any, shape genericShape) {
	for _, key := range genericSeverityKeys {
		v, ok := lookup(obj, key)
		if !ok {
			continue
		}
		text, isText := scalarText(v)
		if !isText {
			n.note(key, "is "+kindOf(v)+", not a severity; ignored")
			continue
		}
		if text = strings.TrimSpace(text); text == "" {
			continue
		}
		if n.SourceSeverity == "" {
			n.SourceSeverity = text
		}
		if strings.EqualFold(text, string(SeverityPending)) {
			return
		}
		if sev, ok := severityByName(text); ok {
			n.Severity, n.SourceSeverity = sev, text
			return
		}
		f, isNum := numberOrText(v)
		if !isNum {
			continue
		}
		var sev Severity
		switch {
		case shape == shapeGuardDuty:
			sev, ok = severity.GuardDuty(f)
		case shape == shapeTheHive:
			sev, ok = severity.TheHive(f)
		case shape == shapeWazuh && key == "rule.level":
			sev, ok = severity.Wazuh(f)
		case shape == shapeSuricata && key == "alert.severity":
			sev, ok = severity.Suricata(f)
		case f <= 10:
			sev, ok = severity.CVSS(f)
		default:
			sev, ok = severity.RiskScore(f)
		}
		if ok {
			n.Severity, n.SourceSeverity = sev, text
			return
		}
	}
}

// Normalize implements Plugin.
func (Generic) Normalize(payload map[string]any) Normalized {
	n := Normalized{Severity: SeverityPending}
	obj, at := genericAlertObject(payload)
	if at != "" {
		n.note("payload", "an event envelope: the alert read at "+at)
	}
	title, at := pickText(&n, obj, genericTitleKeys...)
	if at == "message" || at == "summary" {
		title = firstLine(title) // free text: its first line is the title
	}
	n.Title = cleanTitle(title)
	desc, _ := pickText(&n, obj, genericDescKeys...)
	n.Description = cleanDescription(desc)
	genericSeverity(&n, obj, recognize(obj, payload))
	pickTime(&n, obj, genericTimeKeys...)
	if id, _ := pickText(&n, obj, genericRuleIDKeys...); id != "" {
		name, _ := pickText(&n, obj, genericRuleNameKeys...)
		n.RuleRef = &RuleRef{SourceRuleID: truncateRunes(id, MaxTitleLen), Name: truncateRunes(name, MaxTitleLen)}
	}
	var tags []string
	for _, k := range genericTagKeys {
		tags = append(tags, textList(&n, obj, k)...)
	}
	n.Tags = cleanTags(tags)

	c := newCollector()
	c.inds = append(c.inds, genericIndicators(&n, payload)...)
	for _, f := range genericFlat {
		c.both(f.field, f.typ, textList(&n, payload, f.key)...)
	}
	genericArtifacts(c, payload)
	walk(payload, func(path []string, v any, parent map[string]any) { genericKeyed(c, path, v, parent) })
	n.Fields, n.Indicators = c.fields, c.inds
	return n
}

// textList reads key (a dot path) as a string or an array of strings; other kinds, and other elements,
// are ignored and noted. Tag lists of objects ({"name": ...}, TheHive and Okta style) give their name.
func textList(n *Normalized, obj map[string]any, key string) []string {
	v, ok := lookup(obj, key)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		var skipped int
		for _, e := range x {
			switch el := e.(type) {
			case string:
				out = append(out, el)
			case map[string]any:
				if s, ok := el["name"].(string); ok {
					out = append(out, s)
				} else {
					skipped++
				}
			default:
				skipped++
			}
			if len(out) >= maxValuesPerField {
				break
			}
		}
		if skipped > 0 {
			n.note(key, fmt.Sprintf("%d element(s) not text; ignored", skipped))
		}
		return out
	default:
		n.note(key, "is "+kindOf(v)+", not text or a list of text; ignored")
		return nil
	}
}

// genericIndicators reads the indicators list: elements {value, type?}; an element that is not an
// object, lacks a text value or names an unknown type is ignored and noted (one note per reason).
func genericIndicators(n *Normalized, payload map[string]any) []indicators.Indicator {
	raw, ok := payload["indicators"]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		n.note("indicators", "is "+kindOf(raw)+", not an array; ignored")
		return nil
	}
	if len(list) > maxGenericIndicators {
		n.note("indicators", fmt.Sprintf("%d elements; the first %d read", len(list), maxGenericIndicators))
		list = list[:maxGenericIndicators]
	}
	var out []indicators.Indicator
	bad := map[string]int{}
	var reasons []string
	skip := func(reason string) {
		if bad[reason] == 0 {
			reasons = append(reasons, reason)
		}
		bad[reason]++
	}
	for _, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			skip("not an object")
			continue
		}
		value, ok := obj["value"].(string)
		if !ok {
			skip("no text value")
			continue
		}
		var typ indicators.Type
		switch t := obj["type"].(type) {
		case nil:
			inferred, ok := indicators.Infer(value)
			if !ok {
				skip("no type, and none can be inferred from the value")
				continue
			}
			typ = inferred
		case string:
			parsed, err := indicators.ParseType(t)
			if err != nil {
				skip("unknown type")
				continue
			}
			typ = parsed
		default:
			skip("type not text")
			continue
		}
		out = append(out, indicators.Indicator{Type: typ, Value: value})
	}
	for _, r := range reasons {
		n.note("indicators", fmt.Sprintf("%d element(s) ignored: %s", bad[r], r))
	}
	return out
}

// genericKeys are the keys (the last path segment, case-insensitive, at any depth) whose values the
// generic plugin reads as indicators: the names vendors give IP addresses, accounts and hashes
// (GuardDuty ipAddressV4 and userName, CrowdStrike SHA256String and LocalIP, SentinelOne agentIpV4,
// Okta ipAddress and alternateId, Wazuh srcip and srcuser, Cortex XDR action_local_ip…). URLs,
// e-mail addresses and domains are left to the free-text scan, whose guards know reference links.
var genericKeys = map[string]indicators.Type{
	"ip": indicators.TypeIP, "ipaddressv4": indicators.TypeIP, "ipaddressv6": indicators.TypeIP, "ipaddress": indicators.TypeIP, "ip_address": indicators.TypeIP,
	"srcip": indicators.TypeIP, "dstip": indicators.TypeIP, "src_ip": indicators.TypeIP, "dest_ip": indicators.TypeIP,
	"dst_ip": indicators.TypeIP, "source_ip": indicators.TypeIP, "destination_ip": indicators.TypeIP, "remote_ip": indicators.TypeIP,
	"remoteaddress": indicators.TypeIP, "localaddress": indicators.TypeIP, "localip": indicators.TypeIP, "remoteip": indicators.TypeIP,
	"externalip": indicators.TypeIP, "external_ip": indicators.TypeIP, "agentipv4": indicators.TypeIP, "agentipv6": indicators.TypeIP,
	"client_ip": indicators.TypeIP, "clientip": indicators.TypeIP, "senderip": indicators.TypeIP, "clickip": indicators.TypeIP,
	"action_local_ip": indicators.TypeIP, "action_remote_ip": indicators.TypeIP, "host_ip": indicators.TypeIP,
	"publicip": indicators.TypeIP, "privateipaddress": indicators.TypeIP, "publicipaddress": indicators.TypeIP,
	"username": indicators.TypeAccount, "user_name": indicators.TypeAccount, "srcuser": indicators.TypeAccount,
	"dstuser": indicators.TypeAccount, "src_user": indicators.TypeAccount, "accountname": indicators.TypeAccount,
	"alternateid": indicators.TypeAccount, "actor_effective_username": indicators.TypeAccount,
	"md5": indicators.TypeMD5, "sha1": indicators.TypeSHA1, "sha256": indicators.TypeSHA256,
	"md5string": indicators.TypeMD5, "sha1string": indicators.TypeSHA1, "sha256string": indicators.TypeSHA256,
	"action_file_md5": indicators.TypeMD5, "action_file_sha256": indicators.TypeSHA256,
	"actor_process_image_md5": indicators.TypeMD5, "actor_process_image_sha256": indicators.TypeSHA256,
}

// genericKeyed reads one leaf by its key (genericKeys); parent is the object holding it. Top-level
// keys of Vigil's own shape are read by genericFlat, not here. An accountName beside an accountId
// names a tenant (SentinelOne's management account, a cloud account), not a user.
func genericKeyed(c *collector, path []string, v any, parent map[string]any) {
	if len(path) == 1 {
		for _, f := range genericFlat {
			if path[0] == f.key {
				return
			}
		}
	}
	t, ok := genericKeys[strings.ToLower(path[len(path)-1])]
	if !ok {
		return
	}
	s, ok := v.(string)
	if s = strings.TrimSpace(s); !ok || s == "" {
		return
	}
	switch t {
	case indicators.TypeIP:
		if isIP(s) {
			c.indicator(t, s)
		}
	case indicators.TypeAccount:
		if _, tenant := parent["accountId"]; tenant && strings.EqualFold(path[len(path)-1], "accountName") {
			return
		}
		c.both(indicators.FieldActorUsername, t, s) // placeholders (none, unknown, xxx) are dropped there
	default:
		if inferred, ok := indicators.Infer(s); ok && inferred == t {
			c.both(hashField(t), t, s)
		}
	}
}

// theHiveTypes maps TheHive observable dataTypes to indicator types.
var theHiveTypes = map[string]indicators.Type{"ip": indicators.TypeIP, "domain": indicators.TypeDomain,
	"fqdn": indicators.TypeDomain, "url": indicators.TypeURL, "mail": indicators.TypeEmail, "mail_subject": "",
	"hash": "", "user-agent": ""}

// genericArtifacts reads TheHive's artifacts[] / observables[] ({dataType, data}); hashes by length.
func genericArtifacts(c *collector, payload map[string]any) {
	for _, key := range []string{"artifacts", "observables"} {
		list, _ := payload[key].([]any)
		if len(list) > maxEntities {
			list = list[:maxEntities]
		}
		for _, a := range list {
			obj, ok := a.(map[string]any)
			if !ok {
				continue
			}
			dt, _ := obj["dataType"].(string)
			data, _ := obj["data"].(string)
			if data = strings.TrimSpace(data); data == "" {
				continue
			}
			if strings.EqualFold(dt, "hash") {
				if t, ok := indicators.Infer(data); ok && (t == indicators.TypeMD5 || t == indicators.TypeSHA1 || t == indicators.TypeSHA256) {
					c.both(hashField(t), t, data)
				}
				continue
			}
			if t := theHiveTypes[strings.ToLower(dt)]; t != "" {
				// An explicit observable, like the indicators list: kept as given.
				c.inds = append(c.inds, indicators.Indicator{Type: t, Value: data})
			}
		}
	}
}
