package sources

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// Sentinel normalizes Microsoft Sentinel and Microsoft Defender alerts and incidents: the incident
// webhook / ARM-REST incident (with relatedEntities and expanded alerts), SecurityAlert rows (Entities
// as an array or a JSON string), Microsoft Graph security alerts and incidents v2 (evidence[],
// alerts[]) and Defender XDR incidents and alerts (alerts[].entities[], evidence[]).
type Sentinel struct{}

// Name implements Plugin.
func (Sentinel) Name() string { return SourceSentinel }

// DisplayName implements Plugin.
func (Sentinel) DisplayName() string { return "Microsoft Sentinel" }

// DefaultAuthType implements Plugin.
func (Sentinel) DefaultAuthType() string { return AuthHMACSHA256 }

// SignatureHeader implements Plugin.
func (Sentinel) SignatureHeader() string { return "X-Sentinel-Signature" }

// Candidate keys of the Sentinel plugin, in order (docs/SOURCES.md). The incident's properties come
// first, then the SecurityAlert row's columns, then Graph and Defender names.
var (
	sentinelTitleKeys = []string{"properties.title", "properties.alertDisplayName", "properties.displayName",
		"properties.Title", "AlertName", "DisplayName", "alertDisplayName", "title", "displayName", "incidentName",
		"alerts.0.title"}
	sentinelDescKeys     = []string{"properties.description", "Description", "description", "alerts.0.description"}
	sentinelSeverityKeys = []string{"properties.severity", "properties.Severity", "AlertSeverity", "Severity", "severity",
		"alerts.0.severity"}
	sentinelTimeKeys = []string{"properties.firstActivityTimeUtc", "properties.createdTimeUtc", "properties.startTimeUtc",
		"properties.timeGenerated", "TimeGenerated", "StartTime", "StartTimeUtc", "firstActivityDateTime",
		"createdDateTime", "alertCreationTime", "createdTime", "firstEventTime", "properties.Timestamp", "time",
		"alerts.0.creationTime", "alerts.0.firstActivity", "lastUpdateTime"}
	sentinelRuleKeys = []string{"detectorId", "AlertType", "properties.alertType"}
	sentinelTagKeys  = []string{"properties.labels.*.labelName", "Tactics", "tags", "customTags"}
	// sentinelEntityLists are the keys (any depth, case-insensitive) whose arrays hold entities or
	// evidence: Entities (SecurityAlert, possibly a JSON string), relatedEntities (incident),
	// evidence (Graph v2, Defender for Endpoint), entities and devices (Defender XDR alerts).
	// Graph security API v1 alerts keep theirs in fileStates, hostStates, userStates and
	// networkConnections.
	sentinelEntityLists = map[string]bool{"entities": true, "relatedentities": true, "evidence": true, "devices": true,
		"filestates": true, "hoststates": true, "userstates": true, "networkconnections": true}
)

// FieldProcessCommandLine is the normalized field holding process command lines (Sentinel process
// entities, Graph process evidence, OCSF command-line observables): text for the free-text scan.
const FieldProcessCommandLine = "process_command_line"

// maxEntitiesString bounds an Entities JSON string that is parsed (longer ones are left to the scan).
const maxEntitiesString = 1 << 20

// Documentation implements Plugin.
func (Sentinel) Documentation() string {
	return "# Microsoft Sentinel\n\n" +
		"POST an incident (Sentinel automation rule / Logic App HTTP action, or the ARM REST incident), a " +
		"SecurityAlert row, a Microsoft Graph security alert or incident (v2), or a Defender XDR incident " +
		"or alert to `/v1/ingest/sentinel`. No object is refused for its shape.\n\n" +
		"Title: the first of " + backticks(sentinelTitleKeys) + "; severity: " + backticks(sentinelSeverityKeys) +
		" (Sentinel/Defender words; anything else → Pending, severity_unmapped); occurred_at: " +
		backticks(sentinelTimeKeys) + "; description: " + backticks(sentinelDescKeys) + "; tags: labels, " +
		"Tactics, tags; detection rule: the last segment of `properties.relatedAnalyticRuleIds[0]`, else " +
		backticks(sentinelRuleKeys) + ". The Logic App envelope `{\"object\": {...}}` is unwrapped.\n\n" +
		"Entities from every `Entities` (array or JSON string), `relatedEntities`, `evidence`, `entities` and " +
		"`devices` list at any depth (incidents' expanded `alerts[]` included): ip, host/device, account/user " +
		"(UPN, NT domain\\\\name, SID), url, filehash, file and process hashes, dns, mailbox, mail message " +
		"senders, process command lines (kept as `process_command_line`), cloud applications and malware names.\n\n" +
		"Signature: `X-Sentinel-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (prefix optional).\n"
}

// backticks renders keys as a comma-separated list of code spans.
func backticks(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "`" + k + "`"
	}
	return strings.Join(out, ", ")
}

// Normalize implements Plugin.
func (Sentinel) Normalize(payload map[string]any) Normalized {
	base := payload
	if _, ok := payload["properties"]; !ok {
		if obj, ok := payload["object"].(map[string]any); ok {
			base = obj
		}
	}
	n := Normalized{Severity: SeverityPending}
	if props, ok := base["properties"]; ok && props != nil {
		if _, isObj := props.(map[string]any); !isObj {
			n.note("properties", "is "+kindOf(props)+", not an object; ignored")
		}
	}
	title, _ := pickText(&n, base, sentinelTitleKeys...)
	n.Title = cleanTitle(title)
	desc, _ := pickText(&n, base, sentinelDescKeys...)
	n.Description = cleanDescription(desc)
	n.SourceSeverity, _ = pickText(&n, base, sentinelSeverityKeys...)
	// Sentinel's and Defender's levels (Informational, Low, Medium, High) map directly, and so do the
	// vendors' words (severity.FromWord): a "Critical" raised through an automation rule is Critical.
	if sev, ok := severityByName(n.SourceSeverity); ok {
		n.Severity = sev
	}
	var tags []string
	for _, k := range sentinelTagKeys {
		for _, t := range stringsAt(base, k) {
			tags = append(tags, strings.Split(t, ",")...) // SecurityAlert's Tactics: "InitialAccess, Persistence"
		}
	}
	if labels, ok := lookup(base, "properties.labels"); ok {
		tags = append(tags, stringsOf(labels)...) // labels given as plain strings
	}
	n.Tags = cleanTags(tags)
	pickTime(&n, base, sentinelTimeKeys...)
	if ids := stringsAt(base, "properties.relatedAnalyticRuleIds"); len(ids) > 0 {
		id := strings.TrimRight(ids[0], "/")
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
		if id != "" {
			n.RuleRef = &RuleRef{SourceRuleID: id}
		}
	}
	if n.RuleRef == nil {
		if id, _ := pickText(&n, base, sentinelRuleKeys...); id != "" {
			n.RuleRef = &RuleRef{SourceRuleID: truncateRunes(id, MaxTitleLen)}
		}
	}

	c := newCollector()
	for _, e := range sentinelEntities(&n, payload) {
		sentinelEntity(c, e)
	}
	// An Advanced Hunting streaming record (AlertEvidence, AlertInfo) keeps its columns in properties;
	// a Defender for Endpoint alert names its device in computerDnsName.
	if cat, _ := base["category"].(string); strings.HasPrefix(cat, "AdvancedHunting-") {
		if props, ok := base["properties"].(map[string]any); ok {
			sentinelEntity(c, props)
		}
	}
	if host := entityGet(base, "computerDnsName"); looksLikeHost(host) {
		c.both(indicators.FieldSrcHostname, indicators.TypeDomain, host)
	}
	n.Fields, n.Indicators = c.fields, c.inds
	return n
}

// sentinelEntities gathers the entity objects of every entity list in payload (sentinelEntityLists,
// any depth up to maxWalkDepth, at most maxWalkNodes nodes visited), at most maxEntities of them. An
// Entities JSON string is parsed when it is at most maxEntitiesString bytes.
func sentinelEntities(n *Normalized, payload map[string]any) []map[string]any {
	var out []map[string]any
	budget := maxWalkNodes
	// nested adds an entity and the entities nested in it (a file's FileHashes, a process's ImageFile
	// and ParentProcess), a few levels deep.
	var nested func(v any, depth int)
	nested = func(v any, depth int) {
		if depth > 4 || len(out) >= maxEntities || budget <= 0 {
			return
		}
		budget--
		switch x := v.(type) {
		case map[string]any:
			out = append(out, x)
			for _, k := range sortedKeys(x) {
				switch x[k].(type) {
				case map[string]any, []any:
					nested(x[k], depth+1)
				}
			}
		case []any:
			for _, c := range x {
				nested(c, depth+1)
			}
		}
	}
	add := func(list []any) {
		for _, e := range list {
			nested(e, 0)
		}
	}
	var rec func(v any, depth int)
	rec = func(v any, depth int) {
		if budget <= 0 || depth > maxWalkDepth || len(out) >= maxEntities {
			return
		}
		budget--
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				c := x[k]
				if sentinelEntityLists[strings.ToLower(k)] {
					switch l := c.(type) {
					case []any:
						add(l)
					case map[string]any: // Defender for Endpoint alerts may carry one evidence object
						add([]any{l})
					case string:
						add(parseEntitiesString(n, k, l))
					}
				}
				rec(c, depth+1)
			}
		case []any:
			for _, c := range x {
				rec(c, depth+1)
			}
		}
	}
	rec(payload, 0)
	return out
}

// parseEntitiesString parses a SecurityAlert row's Entities column, a JSON array in a string.
func parseEntitiesString(n *Normalized, key, s string) []any {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if len(s) > maxEntitiesString {
		n.note(key, "JSON string longer than 1 MiB; not parsed for entities")
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var arr []any
	if err := dec.Decode(&arr); err != nil {
		n.note(key, "is a string that is not a JSON array of entities; ignored")
		return nil
	}
	return arr
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// entityObjects are the objects of an entity that carry its fields: the entity itself, its
// "properties" (ARM shape), Graph evidence's nested userAccount, fileDetails and imageFile, and the
// Graph v1 fileHash.
func entityObjects(e map[string]any) []map[string]any {
	out := []map[string]any{e}
	for _, k := range []string{"properties", "userAccount", "fileDetails", "imageFile", "fileHash"} {
		if m, ok := e[k].(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// entityGet reads the first of keys from an entity's objects (entityObjects), case-insensitively.
func entityGet(e map[string]any, keys ...string) string {
	for _, key := range keys {
		for _, obj := range entityObjects(e) {
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
	}
	return ""
}

// entityKind is the entity's kind, lower-case: Type (SecurityAlert), kind (incident), entityType
// (Defender), or the Graph @odata.type without its namespace and "Evidence" suffix.
func entityKind(e map[string]any) string {
	kind := entityGet(e, "Type", "kind", "entityType")
	if kind == "" {
		t := entityGet(e, "@odata.type")
		t = t[strings.LastIndexByte(t, '.')+1:]
		kind = strings.TrimSuffix(t, "Evidence")
	}
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(kind))
}

func sentinelEntity(c *collector, e map[string]any) {
	kind := entityKind(e)
	// Read whatever the kind: hashes wherever the entity keeps them (file entities, process image files,
	// Graph fileDetails, v1 fileHash.hashValue by length), IP addresses under their unambiguous names,
	// command lines, and the account of a process, file or evidence row.
	c.both(indicators.FieldFileHashMD5, indicators.TypeMD5, nonEmpty(entityGet(e, "md5"))...)
	c.both(indicators.FieldFileHashSHA1, indicators.TypeSHA1, nonEmpty(entityGet(e, "sha1"))...)
	c.both(indicators.FieldFileHashSHA256, indicators.TypeSHA256, nonEmpty(entityGet(e, "sha256"))...)
	if h := entityGet(e, "hashValue"); h != "" {
		if t, ok := indicators.Infer(h); ok && (t == indicators.TypeMD5 || t == indicators.TypeSHA1 || t == indicators.TypeSHA256) {
			c.both(hashField(t), t, h)
		}
	}
	for _, k := range []string{"ipAddress", "RemoteIP", "LocalIP", "publicIpAddress", "privateIpAddress", "destinationAddress",
		"sourceAddress", "logonIp"} {
		if v := entityGet(e, k); isIP(v) {
			c.indicator(indicators.TypeIP, v)
		}
	}
	for _, k := range []string{"RemoteUrl", "destinationUrl"} {
		c.indicator(indicators.TypeURL, entityGet(e, k))
	}
	if cmd := entityGet(e, "CommandLine", "processCommandLine"); cmd != "" {
		c.field(FieldProcessCommandLine, cmd)
	}
	if kind != "account" && kind != "user" && entityGet(e, "accountName", "userPrincipalName", "AccountUpn") != "" {
		sentinelAccount(c, e, false)
	}
	if host := entityGet(e, "fqdn", "computerDnsName"); looksLikeHost(host) {
		c.both(indicators.FieldSrcHostname, indicators.TypeDomain, host)
	}
	switch kind {
	case "ip":
		c.both(indicators.FieldSrcIP, indicators.TypeIP, nonEmpty(entityGet(e, "Address", "ipAddress"))...)
	case "account", "user":
		sentinelAccount(c, e, true)
	case "host", "device", "machine":
		host := entityGet(e, "FQDN", "deviceDnsName", "dnsName")
		if host == "" {
			host = entityGet(e, "HostName", "computerDnsName")
			if dom := entityGet(e, "DnsDomain"); host != "" && dom != "" && !strings.Contains(host, ".") {
				host += "." + dom
			}
		}
		if looksLikeHost(host) { // a bare machine name is not a domain
			c.both(indicators.FieldSrcHostname, indicators.TypeDomain, host)
		}
	case "url":
		c.both(indicators.FieldHTTPURL, indicators.TypeURL, nonEmpty(entityGet(e, "Url"))...)
	case "filehash":
		val := entityGet(e, "Value", "hashValue")
		switch strings.ToUpper(strings.ReplaceAll(entityGet(e, "Algorithm"), "-", "")) {
		case "MD5":
			c.both(indicators.FieldFileHashMD5, indicators.TypeMD5, nonEmpty(val)...)
		case "SHA1":
			c.both(indicators.FieldFileHashSHA1, indicators.TypeSHA1, nonEmpty(val)...)
		case "SHA256":
			c.both(indicators.FieldFileHashSHA256, indicators.TypeSHA256, nonEmpty(val)...)
		}
	case "dns":
		c.both(indicators.FieldDNSQuery, indicators.TypeDomain, nonEmpty(entityGet(e, "DomainName"))...)
	case "mailbox":
		c.indicator(indicators.TypeEmail, entityGet(e, "MailboxPrimaryAddress", "primaryAddress", "mailboxAddress", "Upn"))
	case "mailmessage", "analyzedmessage":
		c.both(indicators.FieldEmailFrom, indicators.TypeEmail, nonEmpty(entityGet(e, "Sender", "P1Sender", "senderFromAddress"))...)
		if m, ok := e["p1Sender"].(map[string]any); ok {
			c.both(indicators.FieldEmailFrom, indicators.TypeEmail, nonEmpty(entityGet(m, "emailAddress"))...)
		}
		c.indicator(indicators.TypeIP, entityGet(e, "SenderIP", "senderIp"))
	case "cloudapplication":
		c.field("cloud_application", entityGet(e, "Name", "displayName", "AppId", "appId"))
	case "malware":
		c.field("malware_name", entityGet(e, "Name", "name"))
	}
}

// sentinelAccount reads an account or user entity: a UPN (Name@UPNSuffix, userPrincipalName), else
// NT domain\name, else the SID or Entra object id, each kept as an account. byName: the entity is an
// account, so its "Name" is the account's (on a file or process it is not).
func sentinelAccount(c *collector, e map[string]any, byName bool) {
	name := entityGet(e, "AccountName")
	if byName && name == "" {
		name = entityGet(e, "Name")
	}
	upn := entityGet(e, "userPrincipalName", "UserPrincipalName", "AccountUpn")
	if upn == "" && name != "" {
		if suffix := entityGet(e, "UPNSuffix"); suffix != "" && !strings.Contains(name, "@") {
			upn = name + "@" + suffix
		}
	}
	account := upn
	if account == "" && name != "" {
		account = name
		if dom := entityGet(e, "NTDomain", "domainName"); dom != "" && !strings.ContainsAny(name, `\@`) {
			account = dom + `\` + name
		}
	}
	if account == "" && byName {
		account = entityGet(e, "Sid", "userSid", "AadUserId", "azureAdUserId")
	}
	if account == "" {
		return
	}
	c.both(indicators.FieldActorUsername, indicators.TypeAccount, account)
	if _, err := indicators.Normalize(indicators.TypeEmail, account); err == nil {
		c.both(indicators.FieldActorEmail, indicators.TypeEmail, account)
	}
}

// nonEmpty is vals without blank strings.
func nonEmpty(vals ...string) []string {
	out := vals[:0:0]
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}
