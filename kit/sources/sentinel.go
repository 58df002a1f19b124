package sources

import (
	"encoding/json"
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Sentinel normalizes Microsoft Sentinel incident webhooks.
type Sentinel struct{}

// Name implements Plugin.
func (Sentinel) Name() string { return SourceSentinel }

// DisplayName implements Plugin.
func (Sentinel) DisplayName() string { return "Microsoft Sentinel" }

// DefaultAuthType implements Plugin.
func (Sentinel) DefaultAuthType() string { return AuthHMACSHA256 }

// SignatureHeader implements Plugin.
func (Sentinel) SignatureHeader() string { return "X-Sentinel-Signature" }

// Documentation implements Plugin.
func (Sentinel) Documentation() string {
	return "# Microsoft Sentinel\n\n" +
		"POST the incident (as sent by a Sentinel automation rule / Logic App HTTP action) to " +
		"`/v1/ingest/sentinel`.\n\n" +
		"Payload: `properties.title` (required), `properties.description`, `properties.severity` " +
		"(High, Medium, Low, Informational; anything else → Pending), `properties.labels[].labelName` (tags), " +
		"`properties.firstActivityTimeUtc` / `createdTimeUtc` (occurred_at), " +
		"`properties.relatedAnalyticRuleIds[0]` (detection rule; the last path segment is the rule id), " +
		"and `Entities[]` (array, or the JSON string Sentinel alerts carry) of type `ip` (Address), " +
		"`account` (Name, UPNSuffix), `host` (FQDN, or HostName + DnsDomain), `url` (Url), " +
		"`filehash` (Algorithm, Value), `dns` (DomainName), `mailbox` (MailboxPrimaryAddress), " +
		"`mailMessage` (Sender). The Logic App trigger envelope `{\"object\": {\"properties\": ...}}` and " +
		"`properties.relatedEntities[]` (`kind` + `properties`) are accepted too.\n\n" +
		"Signature: `X-Sentinel-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (prefix optional).\n"
}

// Normalize implements Plugin.
func (Sentinel) Normalize(payload map[string]any) (Normalized, validate.Errors) {
	base, enveloped := payload, false
	if _, ok := payload["properties"]; !ok {
		if obj, ok := payload["object"].(map[string]any); ok {
			base, enveloped = obj, true
		}
	}
	var errs validate.Errors
	if props, ok := lookup(base, "properties"); ok {
		if _, isObj := props.(map[string]any); !isObj {
			errs.Add(loc("properties"), validate.TypeObject, "must be an object", nil)
		}
	}
	var title string
	if len(errs) == 0 {
		title = requiredString(base, "properties.title", &errs)
	}
	if len(errs) > 0 {
		if enveloped {
			for i := range errs {
				errs[i].Loc = validate.Join([]any{"object"}, errs[i].Loc...)
			}
		}
		return Normalized{}, errs
	}

	n := Normalized{
		Title:       cleanTitle(title),
		Description: cleanDescription(optString(base, "properties.description")),
		Severity:    SeverityPending,
	}
	n.SourceSeverity = optString(base, "properties.severity")
	// Sentinel's own levels (Informational, Low, Medium, High) map directly, and so do the vendors'
	// words (severity.FromWord): a "Critical" raised through an automation rule is Critical.
	if sev, ok := severityByName(n.SourceSeverity); ok {
		n.Severity = sev
	}
	var tags []string
	tags = append(tags, stringsAt(base, "properties.labels.*.labelName")...)
	if labels, ok := lookup(base, "properties.labels"); ok {
		tags = append(tags, stringsOf(labels)...) // labels given as plain strings
	}
	n.Tags = cleanTags(tags)
	n.OccurredAt = firstTime(base, false, "properties.firstActivityTimeUtc", "properties.createdTimeUtc")
	if ids := stringsAt(base, "properties.relatedAnalyticRuleIds"); len(ids) > 0 {
		id := ids[0]
		if i := strings.LastIndexByte(strings.TrimRight(id, "/"), '/'); i >= 0 {
			id = strings.TrimRight(id, "/")[i+1:]
		}
		if id != "" {
			n.RuleRef = &RuleRef{SourceRuleID: id}
		}
	}

	c := newCollector()
	for _, e := range sentinelEntities(payload, base) {
		sentinelEntity(c, e)
	}
	n.Fields, n.Indicators = c.fields, c.inds
	return n, nil
}

// sentinelEntities gathers entity objects from Entities (array or JSON string) and
// properties.relatedEntities, at most maxEntities of them.
func sentinelEntities(payload, base map[string]any) []map[string]any {
	var raw []any
	for _, v := range []any{payload["Entities"], payload["entities"], lookupOrNil(base, "properties.relatedEntities")} {
		switch x := v.(type) {
		case []any:
			raw = append(raw, x...)
		case string:
			var arr []any
			if json.Unmarshal([]byte(x), &arr) == nil {
				raw = append(raw, arr...)
			}
		}
	}
	out := make([]map[string]any, 0, len(raw))
	for _, e := range raw {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
			if len(out) == maxEntities {
				break
			}
		}
	}
	return out
}

func lookupOrNil(root any, path string) any {
	v, _ := lookup(root, path)
	return v
}

// entityGet reads key from an entity, case-insensitively, from the entity itself or its "properties"
// object (REST API shape).
func entityGet(e map[string]any, key string) string {
	for _, m := range []any{e, e["properties"]} {
		obj, ok := m.(map[string]any)
		if !ok {
			continue
		}
		if s, ok := scalarText(obj[key]); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
		for k, v := range obj {
			if strings.EqualFold(k, key) {
				if s, ok := scalarText(v); ok && strings.TrimSpace(s) != "" {
					return strings.TrimSpace(s)
				}
			}
		}
	}
	return ""
}

func sentinelEntity(c *collector, e map[string]any) {
	kind := entityGet(e, "Type")
	if kind == "" {
		kind = entityGet(e, "kind")
	}
	switch strings.ToLower(kind) {
	case "ip":
		c.both(indicators.FieldSrcIP, indicators.TypeIP, entityGet(e, "Address"))
	case "account":
		name := entityGet(e, "Name")
		if name == "" {
			name = entityGet(e, "AccountName")
		}
		if name == "" {
			return
		}
		account := name
		if suffix := entityGet(e, "UPNSuffix"); suffix != "" && !strings.Contains(name, "@") {
			account = name + "@" + suffix
		}
		c.both(indicators.FieldActorUsername, indicators.TypeAccount, account)
		if _, err := indicators.Normalize(indicators.TypeEmail, account); err == nil {
			c.both(indicators.FieldActorEmail, indicators.TypeEmail, account)
		}
	case "host":
		host := entityGet(e, "FQDN")
		if host == "" {
			host = entityGet(e, "HostName")
			if dom := entityGet(e, "DnsDomain"); host != "" && dom != "" && !strings.Contains(host, ".") {
				host += "." + dom
			}
		}
		c.both(indicators.FieldSrcHostname, indicators.TypeDomain, host)
	case "url":
		c.both(indicators.FieldHTTPURL, indicators.TypeURL, entityGet(e, "Url"))
	case "filehash":
		val := entityGet(e, "Value")
		switch strings.ToUpper(strings.ReplaceAll(entityGet(e, "Algorithm"), "-", "")) {
		case "MD5":
			c.both(indicators.FieldFileHashMD5, indicators.TypeMD5, val)
		case "SHA1":
			c.both(indicators.FieldFileHashSHA1, indicators.TypeSHA1, val)
		case "SHA256":
			c.both(indicators.FieldFileHashSHA256, indicators.TypeSHA256, val)
		}
	case "dns":
		c.both(indicators.FieldDNSQuery, indicators.TypeDomain, entityGet(e, "DomainName"))
	case "mailbox":
		c.indicator(indicators.TypeEmail, entityGet(e, "MailboxPrimaryAddress"))
	case "mailmessage":
		c.both(indicators.FieldEmailFrom, indicators.TypeEmail, entityGet(e, "Sender"))
	}
}
