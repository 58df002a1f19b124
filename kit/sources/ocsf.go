package sources

import (
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
)

// OCSF normalizes Open Cybersecurity Schema Framework findings: Detection Finding (2004), Security
// Finding (2001, OCSF 1.0's finding object), Incident Finding (2005) and the other finding classes,
// as AWS Security Lake and a growing list of vendors emit them.
type OCSF struct{}

// Name implements Plugin.
func (OCSF) Name() string { return SourceOCSF }

// DisplayName implements Plugin.
func (OCSF) DisplayName() string { return "OCSF findings" }

// DefaultAuthType implements Plugin.
func (OCSF) DefaultAuthType() string { return AuthHMACSHA256 }

// SignatureHeader implements Plugin.
func (OCSF) SignatureHeader() string { return "X-Vigil-Signature" }

// Candidate keys of the OCSF plugin, in order (docs/SOURCES.md).
var (
	ocsfTitleKeys = []string{"finding_info.title", "finding.title", "metadata.event_code", "message", "type_name", "class_name"}
	ocsfDescKeys  = []string{"finding_info.desc", "finding.desc", "message", "desc"}
	ocsfTimeKeys  = []string{"time", "time_dt", "finding_info.created_time", "finding_info.created_time_dt",
		"finding.created_time", "finding_info.first_seen_time", "start_time"}
	ocsfRuleIDKeys   = []string{"finding_info.analytic.uid", "finding_info.analytic.name", "analytic.uid", "analytic.name"}
	ocsfRuleNameKeys = []string{"finding_info.analytic.name", "analytic.name"}
)

// ocsfObservableTypes maps OCSF observable type_ids to indicator types: 1 Hostname (a domain when it
// has a dot and is not an IP), 2 IP Address, 4 User Name, 5 Email Address, 6 URL String, 8 Hash (by
// length). 13 Command Line is kept as process_command_line; the other ids (MAC, file and process
// names, ports, objects…) are not indicators.
var ocsfObservableTypes = map[int]indicators.Type{
	1: indicators.TypeDomain, 2: indicators.TypeIP, 4: indicators.TypeAccount, 5: indicators.TypeEmail,
	6: indicators.TypeURL,
}

// Documentation implements Plugin.
func (OCSF) Documentation() string {
	return "# OCSF findings\n\n" +
		"POST an OCSF finding (Detection Finding, Security Finding, Incident Finding…) to `/v1/ingest/ocsf`. " +
		"No object is refused for its shape.\n\n" +
		"Title: the first of " + backticks(ocsfTitleKeys) + "; description: " + backticks(ocsfDescKeys) +
		"; severity: `severity_id` (1 Informational, 2 Low, 3 Medium, 4 High, 5 Critical, 6 Fatal → Critical; " +
		"0 Unknown and 99 Other → Pending, severity_unmapped), else the `severity` word; occurred_at: " +
		backticks(ocsfTimeKeys) + " (epoch milliseconds or RFC 3339); detection rule: " + backticks(ocsfRuleIDKeys) +
		"; tags: `finding_info.types` (`finding.types`), `metadata.labels`, `metadata.product.name`.\n\n" +
		"Indicators: `observables[]` by `type_id` (1 Hostname → domain when it has a dot, 2 IP Address, " +
		"4 User Name → account, 5 Email Address, 6 URL String, 8 Hash → md5/sha1/sha256 by length; 13 Command " +
		"Line kept as `process_command_line`), and in `evidences[]`, `resources[]` and the event's own objects: " +
		"`*_endpoint.ip|hostname`, `device.ip|hostname`, `hashes[].value` (algorithm_id 1 MD5, 2 SHA-1, 3 SHA-256), " +
		"`url.url_string`, `query.hostname`, `user.name`, `email_addr`, `cmd_line`.\n\n" +
		"Signature: `X-Vigil-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (prefix optional).\n"
}

// Normalize implements Plugin.
func (OCSF) Normalize(payload map[string]any) Normalized {
	n := Normalized{Severity: SeverityPending}
	title, at := pickText(&n, payload, ocsfTitleKeys...)
	if at == "message" {
		title = firstLine(title)
	}
	n.Title = cleanTitle(title)
	desc, _ := pickText(&n, payload, ocsfDescKeys...)
	n.Description = cleanDescription(desc)
	if v, ok := lookup(payload, "severity_id"); ok {
		if f, ok := numberOrText(v); ok {
			n.SourceSeverity, _ = scalarText(v)
			if sev, ok := severity.OCSFSeverityID(f); ok {
				n.Severity = sev
			}
		} else {
			n.note("severity_id", "is "+kindOf(v)+", not a number; ignored")
		}
	}
	if n.Severity == SeverityPending {
		if word, _ := pickText(&n, payload, "severity"); word != "" {
			if sev, ok := severityByName(word); ok {
				n.Severity, n.SourceSeverity = sev, word
			} else if n.SourceSeverity == "" {
				n.SourceSeverity = word
			}
		}
	}
	pickTime(&n, payload, ocsfTimeKeys...)
	if id, _ := pickText(&n, payload, ocsfRuleIDKeys...); id != "" {
		name, _ := pickText(&n, payload, ocsfRuleNameKeys...)
		n.RuleRef = &RuleRef{SourceRuleID: truncateRunes(id, MaxTitleLen), Name: truncateRunes(name, MaxTitleLen)}
	}
	var tags []string
	for _, k := range []string{"finding_info.types", "finding.types", "metadata.labels", "metadata.product.name"} {
		tags = append(tags, stringsAt(payload, k)...)
	}
	n.Tags = cleanTags(tags)

	c := newCollector()
	ocsfObservables(c, payload)
	walk(payload, func(path []string, v any, _ map[string]any) { ocsfField(c, path, v) })
	ocsfHashes(c, payload)
	n.Fields, n.Indicators = c.fields, c.inds
	return n
}

// ocsfObservables reads observables[] (at most maxEntities).
func ocsfObservables(c *collector, payload map[string]any) {
	list, _ := payload["observables"].([]any)
	if len(list) > maxEntities {
		list = list[:maxEntities]
	}
	for _, o := range list {
		obs, ok := o.(map[string]any)
		if !ok {
			continue
		}
		id, ok := numberOrText(obs["type_id"])
		if !ok {
			continue
		}
		val, ok := scalarText(obs["value"])
		if val = strings.TrimSpace(val); !ok || val == "" {
			continue
		}
		switch int(id) {
		case 1:
			if looksLikeHost(val) {
				c.indicator(indicators.TypeDomain, val)
			}
		case 8:
			if t, ok := indicators.Infer(val); ok && (t == indicators.TypeMD5 || t == indicators.TypeSHA1 || t == indicators.TypeSHA256) {
				c.both(hashField(t), t, val)
			}
		case 13:
			c.field(FieldProcessCommandLine, val)
		default:
			if t, ok := ocsfObservableTypes[int(id)]; ok && float64(int(id)) == id {
				c.indicator(t, val)
			}
		}
	}
}

// ocsfRules map OCSF attribute paths (by suffix) to normalized fields and indicator types.
var ocsfRules = []pathRule{
	{"src_endpoint.ip", indicators.FieldSrcIP, indicators.TypeIP, false},
	{"dst_endpoint.ip", indicators.FieldDstIP, indicators.TypeIP, false},
	{"device.ip", "", indicators.TypeIP, false},
	{"endpoint.ip", "", indicators.TypeIP, false},
	{"src_endpoint.hostname", indicators.FieldSrcHostname, indicators.TypeDomain, true},
	{"dst_endpoint.hostname", indicators.FieldDstHostname, indicators.TypeDomain, true},
	{"device.hostname", indicators.FieldSrcHostname, indicators.TypeDomain, true},
	{"query.hostname", indicators.FieldDNSQuery, indicators.TypeDomain, false},
	{"url.url_string", indicators.FieldHTTPURL, indicators.TypeURL, false},
	{"url.hostname", indicators.FieldHTTPHostname, indicators.TypeDomain, true},
	{"user.name", indicators.FieldActorUsername, indicators.TypeAccount, false},
	{"user.email_addr", indicators.FieldActorEmail, indicators.TypeEmail, false},
	{"email.from", indicators.FieldEmailFrom, indicators.TypeEmail, false},
	{"email.reply_to", indicators.FieldEmailReplyTo, indicators.TypeEmail, false},
	{"cmd_line", FieldProcessCommandLine, "", false},
}

// ocsfField applies the first matching ocsfRule to one leaf. Observables are read by ocsfObservables;
// metadata (the product's own identity) holds no indicator.
func ocsfField(c *collector, path []string, v any) {
	if len(path) > 0 && (path[0] == "observables" || path[0] == "metadata") {
		return
	}
	s, ok := scalarText(v)
	if s = strings.TrimSpace(s); !ok || s == "" {
		return
	}
	applyPathRules(c, ocsfRules, path, s)
}

// ocsfHashes reads OCSF fingerprint objects ({algorithm_id, value}, in any "hashes" array): 1 MD5,
// 2 SHA-1, 3 SHA-256; other algorithms are not indicators. The walk is bounded like walk's.
func ocsfHashes(c *collector, root any) {
	budget := maxWalkNodes
	var rec func(v any, inHashes bool, depth int)
	rec = func(v any, inHashes bool, depth int) {
		if budget <= 0 || depth > maxWalkDepth {
			return
		}
		budget--
		switch x := v.(type) {
		case map[string]any:
			if inHashes {
				alg, _ := numberOrText(x["algorithm_id"])
				val, _ := scalarText(x["value"])
				if val = strings.TrimSpace(val); val != "" {
					switch alg {
					case 1:
						c.both(indicators.FieldFileHashMD5, indicators.TypeMD5, val)
					case 2:
						c.both(indicators.FieldFileHashSHA1, indicators.TypeSHA1, val)
					case 3:
						c.both(indicators.FieldFileHashSHA256, indicators.TypeSHA256, val)
					}
				}
				return
			}
			for _, k := range sortedKeys(x) {
				if k == "metadata" || k == "observables" {
					continue
				}
				rec(x[k], k == "hashes", depth+1)
			}
		case []any:
			for _, e := range x {
				rec(e, inHashes, depth+1)
			}
		}
	}
	rec(root, false, 0)
}
