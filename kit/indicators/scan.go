package indicators

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Pass 4 (API.md §4): a bounded scan of every string value of the raw payload for IPv4/IPv6
// addresses, URLs, e-mail addresses, domains under an ICANN public suffix and MD5/SHA-1/SHA-256
// hashes, after refanging defanged forms. The precision guards are documented in docs/SOURCES.md
// ("Pass 4"); each has a test in scan_test.go.

// ScanBudget bounds one pass-4 scan. Whatever the payload, the scan visits at most Strings string
// values, reads at most Bytes bytes of them (at most PerString of any one), descends at most Depth
// levels of objects and arrays, takes at most Candidates candidate values and stops at Time.
type ScanBudget struct {
	Strings    int
	Bytes      int
	PerString  int
	Depth      int
	Candidates int
	Time       time.Duration // 0: no time bound (tests)
}

// DefaultScanBudget is the budget of the pipeline's pass 4: a 1 MB payload of 50 000 strings
// finishes in tens of milliseconds (docs/PERFORMANCE.md "Pass 4").
var DefaultScanBudget = ScanBudget{
	Strings:    20_000,
	Bytes:      2 << 20,
	PerString:  64 << 10,
	Depth:      64,
	Candidates: 4 * MaxExtracted,
	Time:       250 * time.Millisecond,
}

// ScanStats says what one pass-4 scan visited and, when it stopped early, why.
type ScanStats struct {
	Strings  int    `json:"strings"`
	Bytes    int    `json:"bytes"`
	Stopped  string `json:"stopped,omitempty"` // "" when every string was scanned in full
	Excluded int    `json:"excluded"`          // values dropped by the never-indicator list (passes 2-4)
}

// scanner walks a decoded payload and emits pass-4 candidates.
type scanner struct {
	budget   ScanBudget
	emit     func(path string, t Type, value string)
	stats    ScanStats
	path     []string
	found    int
	deadline time.Time
	stop     bool
}

func (s *scanner) halt(reason string) {
	if !s.stop {
		s.stop = true
		s.stats.Stopped = reason
	}
}

func (s *scanner) pathString() string { return strings.Join(s.path, ".") }

// parentKey is the nearest object key above the current position, array indexes skipped.
func (s *scanner) parentKey() string {
	for i := len(s.path) - 1; i >= 0; i-- {
		if _, err := strconv.Atoi(s.path[i]); err != nil {
			return s.path[i]
		}
	}
	return ""
}

// keyClass is what a key says about the values under it, and under every key below it: a set of
// guards.
type keyClass uint8

const (
	keyPlain     keyClass = 0
	keyReference keyClass = 1 << iota // links to consoles and documentation, people: nothing below
	noIP                              // version strings and OIDs
	noHash                            // identifiers, thumbprints, fingerprints, commits
	noDomain                          // names of malware, threats, datasets; a user's AD domain
	noEmail                           // message ids (<id@host>)
	userValue                         // the key names a user: its string values (in arrays too) are accounts; not inherited by keys below
	ruleText                          // a detection rule's query or search: its string values are logic, not this alert's indicators; not inherited
	keyVersion   = noIP | noHash
	keyID        = noHash
	keyLabel     = noDomain
)

// walk scans node. class is the union of the classes of the keys above it.
func (s *scanner) walk(node any, class keyClass, depth int) {
	if s.stop {
		return
	}
	if depth > s.budget.Depth {
		if s.stats.Stopped == "" { // the deeper part is left out; the rest is still scanned
			s.stats.Stopped = "nesting deeper than " + strconv.Itoa(s.budget.Depth) + " levels"
		}
		return
	}
	switch v := node.(type) {
	case string:
		s.scanString(v, class)
	case map[string]any:
		keys := sortedKeys(v)
		for _, k := range keys {
			if s.stop {
				return
			}
			c := classifyKey(k)
			if c&keyReference != 0 || k == "name" && s.parentKey() == "observables" {
				continue // OCSF observables name the field their value came from (a path, not a host)
			}
			if k == "host" && splunkSummary(v) {
				continue // a summary-indexed event's host is the search head that wrote it
			}
			c |= class &^ (userValue | ruleText)
			s.path = append(s.path, k)
			s.walk(v[k], c, depth+1)
			s.path = s.path[:len(s.path)-1]
		}
	case []any:
		for i, e := range v {
			if s.stop {
				return
			}
			s.path = append(s.path, strconv.Itoa(i))
			s.walk(e, class, depth+1)
			s.path = s.path[:len(s.path)-1]
		}
	}
}

// splunkSummary reports a Splunk event written to a summary index by a search (sourcetype stash:
// Enterprise Security notables, summary indexing), whose host, source and splunk_server name the
// Splunk search head that wrote it, not what the alert is about.
func splunkSummary(event map[string]any) bool {
	st, _ := event["sourcetype"].(string)
	return strings.EqualFold(st, "stash")
}

func (s *scanner) scanString(v string, class keyClass) {
	if s.stats.Strings >= s.budget.Strings {
		s.halt("more than " + strconv.Itoa(s.budget.Strings) + " strings")
		return
	}
	s.stats.Strings++
	if s.budget.Time > 0 && s.stats.Strings%64 == 0 && time.Now().After(s.deadline) {
		s.halt("time budget of " + s.budget.Time.String() + " spent")
		return
	}
	if len(v) > s.budget.PerString {
		v = v[:s.budget.PerString]
	}
	if left := s.budget.Bytes - s.stats.Bytes; len(v) > left {
		v = v[:left]
		s.halt("more than " + strconv.Itoa(s.budget.Bytes) + " bytes")
	}
	s.stats.Bytes += len(v)
	if strings.HasPrefix(v, "arn:") || strings.HasPrefix(v, "/subscriptions/") {
		return // a cloud resource's name (AWS ARN, Azure resource id): its parts are not indicators
	}
	if embedded, ok := embeddedJSON(v); ok {
		// A JSON document inside a string (Sentinel's Entities, Elastic's event.original): walked like
		// the payload, under the string's path, so the key guards apply inside it too.
		s.walk(embedded, class, len(s.path)+1)
		return
	}
	if class&ruleText != 0 {
		return // field names, wildcards and ranges of a rule's logic (kibana.alert.rule.parameters.query)
	}
	if class&userValue != 0 {
		s.account(v) // the value of a key naming a user (user_name, processUser, target_user)
		return
	}
	if len(v) < 7 { // the shortest candidate is an IPv6 "a::b" or a domain "a.bc"; 7 skips most noise cheaply
		if len(v) < 4 || !strings.ContainsAny(v, ".:") {
			return
		}
	}
	text := refang(v)
	s.scanText(text, class)
}

// embeddedJSON decodes a string that holds a JSON object or array.
func embeddedJSON(v string) (any, bool) {
	t := strings.TrimSpace(v)
	if len(t) < 2 || !(t[0] == '{' && t[len(t)-1] == '}' || t[0] == '[' && t[len(t)-1] == ']') {
		return nil, false
	}
	var out any
	if err := json.Unmarshal([]byte(t), &out); err != nil {
		return nil, false
	}
	switch out.(type) {
	case map[string]any, []any:
		return out, true
	}
	return nil, false
}

// candidate hands one value to the extractor, within the candidate budget.
func (s *scanner) candidate(t Type, value string) {
	if s.found >= s.budget.Candidates {
		s.halt("more than " + strconv.Itoa(s.budget.Candidates) + " candidates")
		return
	}
	s.found++
	s.emit(s.pathString(), t, value)
}

// scanText finds URLs first (and blanks them), then the tokens of what is left.
func (s *scanner) scanText(text string, class keyClass) {
	rest := text
	if strings.Contains(text, "://") {
		var b strings.Builder
		last := 0
		for i := 0; ; {
			j := strings.Index(text[i:], "://")
			if j < 0 {
				break
			}
			at := i + j
			start := at
			for start > 0 && isAlpha(text[start-1]) {
				start--
			}
			scheme := strings.ToLower(text[start:at])
			end := at + 3
			for end < len(text) && isURLByte(text[end]) {
				end++
			}
			i = end
			if end == at+3 {
				continue
			}
			switch scheme {
			case "http", "https", "ftp":
			default:
				continue
			}
			u := trimURL(text[start:end])
			if s.stop {
				return
			}
			s.candidate(TypeURL, u)
			b.WriteString(text[last:start])
			b.WriteByte(' ')
			last = end
		}
		if last > 0 {
			b.WriteString(text[last:])
			rest = b.String()
		}
	}
	if strings.IndexByte(rest, '=') >= 0 {
		s.keyValues(rest)
	}
	if containsFold(rest, "user ") || containsFold(rest, "password for ") || containsFold(rest, "publickey for ") {
		s.phraseUsers(rest)
	}
	s.scanTokens(rest, class)
}

// account takes v as an account name when it looks like one: one line, at most 256 bytes, not a
// redaction (xxx), not an object.
func (s *scanner) account(v string) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 256 || strings.ContainsAny(v, "\n\r{}[]<>\"%$") || Placeholder(TypeAccount, v) ||
		isSID(v) || fieldName(strings.ToLower(v)) {
		return // a redaction, a template (%user.name), a SID (an id: related.user lists both) or a field name
	}
	s.candidate(TypeAccount, v)
}

// isSID reports a Windows security identifier (S-1-5-21-…).
func isSID(v string) bool {
	if len(v) < 5 || !strings.EqualFold(v[:4], "s-1-") {
		return false
	}
	for i := 4; i < len(v); i++ {
		if !(v[i] >= '0' && v[i] <= '9' || v[i] == '-') {
			return false
		}
	}
	return true
}

// fieldName reports a dotted name whose first label is an ECS field set and whose last is a field
// word (user.name, process.name): a field's name, not a value.
func fieldName(v string) bool {
	first, last, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	if i := strings.LastIndexByte(last, '.'); i >= 0 {
		last = last[i+1:]
	}
	return fieldSets[first] && fieldWords[last]
}

// ruleTextKeys name a detection rule's logic: a query, a search (Splunk's webhook `search`).
var ruleTextKeys = setOf("query", "kql", "eql", "esql", "spl", "search", "searchquery", "savedsearch",
	"rulequery", "querytext", "searchstring")

// userKeys name keys whose value is a user: in objects and in key=value text (Splunk's _raw, CEF,
// sudo's USER=root).
var userKeys = setOf("user", "username", "srcuser", "suser", "duser", "targetuser", "targetusername",
	"subjectusername", "processuser", "samaccountname", "logonuser", "usrname",
	"sourceusername", "destinationusername", "loginname", "sourceuser", "destuser", "principalname")

// keyValues reads key=value and key="value" pairs of text whose key names a user.
func (s *scanner) keyValues(text string) {
	for i := strings.IndexByte(text, '='); i > 0 && !s.stop; {
		k := i
		for k > 0 && (isTokenByte(text[k-1]) || text[k-1] == ':') {
			k--
		}
		key := text[k:i]
		if d := strings.LastIndexAny(key, ".:"); d >= 0 {
			key = key[d+1:]
		}
		rest := text[i+1:]
		var val string
		if strings.HasPrefix(rest, "\"") {
			if e := strings.IndexByte(rest[1:], '"'); e >= 0 {
				val = rest[1 : 1+e]
			}
		} else {
			e := strings.IndexAny(rest, " \t\n;,&|)")
			if e < 0 {
				e = len(rest)
			}
			val = rest[:e]
		}
		if userKeys[squashKey(key)] {
			s.account(val)
		}
		next := strings.IndexByte(rest, '=')
		if next < 0 {
			return
		}
		i = i + 1 + next
	}
}

// userPhrases precede a user name in log lines (sshd, PAM, sudo).
var userPhrases = []string{"for user ", "by user ", "invalid user ", "password for ", "publickey for "}

// phraseUsers reads the user after the phrases of userPhrases (case-insensitive).
func (s *scanner) phraseUsers(text string) {
	lower := strings.ToLower(text)
	for _, p := range userPhrases {
		for from := 0; !s.stop; {
			j := strings.Index(lower[from:], p)
			if j < 0 {
				break
			}
			start := from + j + len(p)
			end := start
			for end < len(text) && (isTokenByte(text[end]) || text[end] == '\\') {
				end++
			}
			from = end
			if name := strings.Trim(text[start:end], ".:-"); name != "" && !userPhraseWords[strings.ToLower(name)] {
				s.account(name)
			}
		}
	}
}

var userPhraseWords = setOf("invalid", "illegal", "user", "unknown")

// scanTokens splits text on every byte that cannot be part of an address, a name or a hash.
func (s *scanner) scanTokens(text string, class keyClass) {
	start := -1
	ctx := class // the previous word's guards apply to the next token: "Version 1.2.3.4", "RequestId: <hex>"
	for i := 0; i <= len(text); i++ {
		if i < len(text) && isTokenByte(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			prev := byte(0)
			if start > 0 {
				prev = text[start-1]
			}
			tok := text[start:i]
			if i+1 < len(text) && text[i] == '/' && text[i+1] >= '0' && text[i+1] <= '9' {
				ctx |= noIP // 10.0.0.0/8: a range's first address, not a host
			}
			s.token(tok, prev, ctx)
			ctx = class | wordClass(tok)
			start = -1
			if s.stop {
				return
			}
		}
	}
}

// wordClass is what a word in text says about the token after it: a version word, an id word.
func wordClass(w string) keyClass {
	if len(w) > 40 {
		return keyPlain
	}
	n := squashKey(w)
	switch {
	case n == "version" || n == "ver" || n == "v" || n == "build" || n == "release":
		return noIP
	case strings.HasSuffix(n, "id") || strings.HasSuffix(n, "guid") || strings.HasSuffix(n, "uuid") ||
		strings.HasSuffix(n, "key") || strings.HasSuffix(n, "token") || strings.HasSuffix(n, "session"):
		return noHash
	}
	return keyPlain
}

// token classifies one token. prev is the byte before it (0 at the start of the string).
func (s *scanner) token(tok string, prev byte, class keyClass) {
	if strings.HasSuffix(tok, "::") || strings.HasPrefix(tok, "::") { // 2a02:cf40::, ::ffff:192.0.2.1
		if addr, err := netip.ParseAddr(tok); err == nil {
			if class&noIP == 0 && usefulIP(addr) {
				s.candidate(TypeIP, addr.String())
			}
			return
		}
	}
	tok = strings.Trim(tok, ".:-_")
	if len(tok) < 3 {
		return
	}
	if strings.IndexByte(tok, '@') >= 0 {
		if class&noEmail == 0 {
			s.emailToken(tok)
		}
		return
	}
	if strings.IndexByte(tok, ':') >= 0 {
		if strings.Count(tok, ":") >= 2 {
			if addr, err := netip.ParseAddr(tok); err == nil && addr.Is6() {
				if class&noIP == 0 && usefulIP(addr) {
					s.candidate(TypeIP, addr.String())
				}
				return
			}
		}
		for _, part := range strings.Split(tok, ":") {
			if part = strings.Trim(part, ".-_"); len(part) >= 3 && !allDigits(part) {
				s.plainToken(part, prev, class)
				if s.stop {
					return
				}
			}
			prev = ':'
		}
		return
	}
	s.plainToken(tok, prev, class)
}

// plainToken is a token without ':' or '@': an IPv4 address, a domain or a hash.
func (s *scanner) plainToken(tok string, prev byte, class keyClass) {
	dots := strings.Count(tok, ".")
	if dots == 3 && isDigitsAndDots(tok) {
		if class&noIP != 0 || prev == 'v' || prev == 'V' || prev == '/' {
			return // a version string (v1.2.3.4, Chrome/125.0.0.0), not an address (guard: version strings)
		}
		if addr, err := netip.ParseAddr(tok); err == nil && usefulIP(addr) {
			s.candidate(TypeIP, addr.String())
		}
		return
	}
	// *.example.com is a certificate's or a rule's pattern; a name after a slash is a path's part
	// (/Applications/Terminal.app).
	if dots >= 1 && prev != '*' && prev != '/' && prev != '\\' && class&noDomain == 0 {
		if d, ok := scanDomain(tok); ok {
			s.candidate(TypeDomain, d)
			return
		}
	}
	if class&noHash != 0 || prev == '/' || prev == '\\' {
		return // an id, or a file named by a hash inside a path
	}
	// Hashes: exact-length hex runs between separators or dots ('-' and '_' join a run to a name:
	// amsistream-1D89…); a run of only digits or only letters is an id or a word, not a hash.
	for _, part := range strings.Split(tok, ".") {
		if t, ok := hashType(part); ok {
			s.candidate(t, part)
		}
	}
}

func (s *scanner) emailToken(tok string) {
	tok = strings.TrimPrefix(strings.TrimPrefix(tok, "mailto:"), "MAILTO:")
	if i := strings.LastIndexByte(tok, ':'); i >= 0 {
		tok = tok[i+1:]
	}
	at := strings.LastIndexByte(tok, '@')
	if at <= 0 || at == len(tok)-1 {
		return
	}
	d, ok := scanDomain(tok[at+1:])
	if !ok || sshNamingDomains[d] {
		return // name@openssh.com is an SSH algorithm's name (RFC 4251 §6), not a mailbox
	}
	s.candidate(TypeEmail, tok)
}

var sshNamingDomains = setOf("openssh.com", "libssh.org")

// usefulIP: unspecified, loopback, broadcast and multicast addresses name no host of the alert.
func usefulIP(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() {
		return false
	}
	return !(a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}))
}

func hashType(part string) (Type, bool) {
	var t Type
	switch len(part) {
	case 32:
		t = TypeMD5
	case 40:
		t = TypeSHA1
	case 64:
		t = TypeSHA256
	default:
		return "", false
	}
	digit, letter := false, false
	for i := 0; i < len(part); i++ {
		c := part[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			letter = true
		default:
			return "", false
		}
	}
	return t, digit && letter
}

// scanDomain reports whether tok is a domain pass 4 keeps: ASCII labels of letters, digits and
// hyphens, a top-level label that is an ICANN public suffix (so .local, .corp, .internal are not),
// something registrable below the suffix, a last label that is not a file extension (svchost.exe,
// report.pdf), and not a field name (process.name).
func scanDomain(tok string) (string, bool) {
	d := strings.ToLower(strings.TrimSuffix(tok, "."))
	if len(d) < 4 || len(d) > MaxDomainLen {
		return "", false
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return "", false
	}
	for _, l := range labels {
		if l == "" || len(l) > MaxLabelLen || l[0] == '-' || l[len(l)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", false
			}
		}
	}
	tld := labels[len(labels)-1]
	if allDigits(tld) || fileExtensions[tld] {
		return "", false
	}
	if fieldName(d) || (labels[0] == "com" || labels[0] == "org") && len(labels) >= 3 {
		return "", false // a field's name, or a reversed name (com.example.app: a Java or Android package)
	}
	if camelCase(tok) || pascalLast(tok) {
		return "", false
	}
	if _, icann := publicsuffix.PublicSuffix(tld); !icann {
		return "", false
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(d); err != nil {
		return "", false
	}
	return d, true
}

// camelCase reports a lower-case letter followed by an upper-case one (CommandLine, winlog.EventData):
// the shape of identifiers, not of host names.
func camelCase(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			return true
		}
	}
	return false
}

// pascalLast reports a last label written Capitalized (Microsoft.Security, System.Net): a namespace,
// not a host name, which is written in one case.
func pascalLast(s string) bool {
	i := strings.LastIndexByte(s, '.')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	l := s[i+1:]
	return l[0] >= 'A' && l[0] <= 'Z' && l[1] >= 'a' && l[1] <= 'z'
}

// fileExtensions are last labels that make a dotted name a file name. Some are also top-level
// domains (.zip, .mov, .py, .sh, .rs, .pl, .md, .ps): a domain under them is missed by pass 4,
// which mappings or pass 1 still find.
var fileExtensions = setOf(
	"exe", "dll", "sys", "drv", "ocx", "cpl", "scr", "msi", "msp", "msc", "lnk", "bat", "cmd",
	"ps1", "psm1", "psd1", "vbs", "vbe", "js", "jse", "wsf", "wsh", "hta", "jar", "class", "py", "pyc",
	"sh", "bash", "pl", "rb", "php", "asp", "aspx", "jsp", "cgi", "go", "rs", "c", "h", "cpp", "cs", "ts",
	"doc", "docx", "docm", "dot", "dotm", "xls", "xlsx", "xlsm", "xlsb", "ppt", "pptx", "pptm", "pdf",
	"rtf", "odt", "ods", "txt", "csv", "log", "md", "json", "xml", "yaml", "yml", "ini", "cfg", "conf",
	"toml", "html", "htm", "css", "svg", "png", "jpg", "jpeg", "gif", "bmp", "ico", "tif", "tiff", "webp",
	"zip", "rar", "7z", "gz", "tgz", "bz2", "xz", "tar", "cab", "iso", "img", "vhd", "vhdx", "dmg", "pkg",
	"deb", "rpm", "apk", "ipa", "bin", "dat", "db", "sqlite", "tmp", "bak", "old", "lock", "pid",
	"evtx", "etl", "pf", "reg", "key", "pem", "crt", "cer", "pfx", "p12", "eml", "msg", "pst", "ost",
	"mp3", "mp4", "mov", "avi", "wav", "mkv", "one", "library-ms", "search-ms", "url", "ps", "so", "ko",
	"elf", "o", "a", "lib", "obj", "pdb", "manifest", "mui", "nls", "tlb", "ax", "efi", "dylib", "plist",
	"service", "socket", "timer", "desktop", "vb", "inf", "sct", "gadget", "application", "appref-ms",
)

// fieldWords and fieldSets: a dotted name whose first label is an ECS field set and whose last label
// is one of these words is a field name (process.name, user.email, host.id), not a domain.
var (
	fieldWords = setOf("name", "id", "email", "host", "network", "domain", "hash", "type", "address",
		"ip", "path", "code", "user", "group", "info", "link", "data", "zone", "directory", "full", "original")
	fieldSets = setOf("agent", "client", "cloud", "container", "destination", "dll", "dns", "ecs", "email",
		"error", "event", "file", "group", "host", "http", "log", "network", "observer", "orchestrator",
		"organization", "package", "process", "registry", "related", "rule", "server", "service", "source",
		"threat", "tls", "url", "user", "user_agent", "vulnerability", "kibana", "signal", "winlog",
		"powershell", "message", "labels", "tags", "device", "entity", "parent", "target", "actor")
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// classifyKey decides what a key says about the values under it (guards: reference keys, version
// strings and OIDs, identifiers). The key is compared lower-cased with '_', '-', '.', '@' and '$'
// removed, so alertLink, alert_link and alert-link are one key.
func classifyKey(k string) keyClass {
	n := squashKey(k)
	switch {
	case n == "":
		return keyPlain
	case userKeys[n]:
		return userValue
	case ruleTextKeys[n]:
		return ruleText
	case referenceKeys[n], personKeys[n], strings.HasPrefix(k, "$"), strings.HasPrefix(k, "@odata"):
		return keyReference
	case strings.HasSuffix(n, "link") || strings.HasSuffix(n, "links") || strings.HasSuffix(n, "reference") ||
		strings.HasSuffix(n, "references") || strings.Contains(n, "useragent") || strings.Contains(n, "article") ||
		strings.Contains(n, "advisor") || strings.Contains(n, "callstack") || strings.HasPrefix(n, "assigned"):
		return keyReference
	case strings.HasSuffix(n, "messageid") || n == "msgid":
		return noEmail | noHash
	case strings.HasSuffix(n, "url") || strings.HasSuffix(n, "uri") || strings.HasSuffix(n, "urls"):
		for _, w := range consoleWords {
			if strings.Contains(n, w) {
				return keyReference
			}
		}
		return keyPlain
	case strings.Contains(n, "version") || strings.HasSuffix(n, "ver") || strings.HasSuffix(n, "build") || n == "oid" || n == "oids":
		return keyVersion
	case n == "signature" || n == "alertsignature":
		return noDomain | noHash // an IDS signature's name (ET MALWARE BTGrab.com Spyware …)
	case labelKeys[n] || hasAnySuffix(n, adDomainKeys) || strings.HasSuffix(n, "isp") || strings.HasSuffix(n, "ispdomain") || strings.HasSuffix(n, "asorg"):
		return keyLabel
	case n == "image" || n == "images":
		return noHash | noDomain // a container image's reference and digest
	case strings.Contains(n, "digest") || strings.Contains(n, "layerhash") || strings.HasSuffix(n, "arn") || idWords[n] ||
		strings.Contains(n, "fingerprint") || strings.Contains(n, "thumbprint") || strings.Contains(n, "bytes") || strings.Contains(n, "disasm") || strings.Contains(n, "imphash") || strings.Contains(n, "dedup") ||
		strings.HasSuffix(n, "token") || strings.HasSuffix(n, "tokens") || strings.HasSuffix(n, "eventhash"):
		return keyID
	case strings.HasSuffix(n, "id") || strings.HasSuffix(n, "ids") || strings.HasSuffix(n, "guid") || strings.HasSuffix(n, "uuid"):
		if strings.HasSuffix(n, "hashid") {
			return keyPlain
		}
		return keyID
	}
	return keyPlain
}

// personKeys name the people working the alert in the sender (the assigned analyst, a comment's
// author): not what the alert is about.
var personKeys = setOf("owner", "assignedto", "assignee", "assigneduser", "createdby", "modifiedby",
	"lastmodifiedby", "updatedby", "closedby", "resolvedby", "author", "analyst", "reviewer",
	"muteinitiator", "comments", "lastupdatedby", "incidentowner")

// labelKeys name malware, threat and signature families, whose names parse like host names
// (infection.family, pva.torrent.openinternet).
var labelKeys = setOf("malware", "malwarename", "family", "families", "threatname", "threatfamily",
	"malwarefamily", "signaturename", "classification", "detectionname", "virusname", "dataset", "module",
	"namespace", "eventtype", "eventcategory", "organization", "asnorg")

// adDomainKeys end keys naming an account's Active Directory or NT domain (NET.example.com): the
// directory the user belongs to, not a host the alert is about.
var adDomainKeys = []string{"accountdomain", "ntdomain", "userdomain", "upnsuffix", "logondomain",
	"subjectdomainname", "targetdomainname"}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// idWords name host and device identifiers and the hash-like fingerprints of tools (a hex value
// under them is an id, not a file hash).
var idWords = setOf("host", "hosts", "hostname", "computer", "device", "machine", "ja3", "ja3s", "hassh",
	"hasshserver", "ssdeep", "tlsh", "checksum", "etag", "nonce", "signature", "thumbprint", "uniquekey",
	"uniquekeyv2", "commit", "build")

// referenceKeys name references to documentation or to the sender's own console.
var referenceKeys = setOf("href", "reference", "references", "documentation", "docs", "doc", "schema",
	"odatacontext", "odatatype", "odataid", "odatanextlink", "helpuri", "learnmore", "moreinfo", "seealso",
	"remediation", "recommendation", "recommendations", "remediationsteps", "threatintelreference", "policy",
	"splunkserver", "si", "searchhead", "logsource", "logsources")

// consoleWords, inside a key ending in "url", name a link to a console or documentation (portal_url,
// alertWebUrl, incidentUrl, results_url) rather than a URL the alert is about (url, request_url).
var consoleWords = []string{"portal", "console", "web", "alert", "incident", "result", "help", "doc",
	"investigation", "detail", "kibana", "view", "ui", "search", "remediation", "rule", "reference",
	"info", "learn", "case", "ticket", "external", "xdr", "finding", "report", "dashboard", "permalink", "self", "api", "schema"}

func squashKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		}
	}
	return b.String()
}

// refang undoes the usual defanging: hxxp(s) → http(s), [.] (.) {.} [dot] (dot) → ., [at] (at) [@] →
// @, [:] → :, [://] → ://. A string without '[', '(', '{' or "xx" is returned as is.
func refang(s string) string {
	hx := containsFold(s, "hxxp")
	if !hx && !strings.ContainsAny(s, "[({") {
		return s
	}
	if hx {
		b := []byte(s)
		for i := 0; i+4 <= len(b); i++ {
			if strings.EqualFold(string(b[i:i+4]), "hxxp") {
				b[i+1], b[i+2] = 't', 't'
			}
		}
		s = string(b)
	}
	return refanger.Replace(s)
}

var refanger = strings.NewReplacer(
	"[.]", ".", "(.)", ".", "{.}", ".", "[dot]", ".", "(dot)", ".", "[DOT]", ".", "[at]", "@", "(at)", "@",
	"[AT]", "@", "[@]", "@", "[:]", ":", "[://]", "://",
)

// containsFold reports whether s contains sub (ASCII, sub lower-case, starting with a letter) in any case.
func containsFold(s, sub string) bool {
	up := sub[0] - 'a' + 'A'
	for i := 0; i+len(sub) <= len(s); i++ {
		if (s[i] == sub[0] || s[i] == up) && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func trimURL(u string) string {
	for len(u) > 0 {
		c := u[len(u)-1]
		if strings.IndexByte(".,;:!?'\"", c) >= 0 || c == ')' && strings.Count(u, "(") < strings.Count(u, ")") ||
			c == ']' && strings.Count(u, "[") < strings.Count(u, "]") {
			u = u[:len(u)-1]
			continue
		}
		break
	}
	return u
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isURLByte: what may follow "scheme://" in a URL found in text (RFC 3986 characters, no quotes,
// spaces, angle brackets or backslashes).
func isURLByte(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return false
	}
	switch c {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}', '\'':
		return false
	}
	return true
}

// isTokenByte: bytes of an address, a name or a hash; every other byte separates tokens.
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '-' || c == '_' || c == ':' || c == '@'
}

func isDigitsAndDots(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			return false
		}
	}
	return true
}
