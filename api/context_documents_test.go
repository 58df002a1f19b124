package api

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

func createDoc(t *testing.T, ts *testServer, key string, body any) map[string]any {
	t.Helper()
	r := ts.do(t, http.MethodPost, "/v1/context-documents", key, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}

// formPart is one part of a multipart body: a field (no file name) or a file.
type formPart struct {
	name, fileName, contentType string
	data                        []byte
}

func formField(name, value string) formPart { return formPart{name: name, data: []byte(value)} }

func file(fileName, contentType string, data []byte) formPart {
	return formPart{name: "file", fileName: fileName, contentType: contentType, data: data}
}

// multipartBody encodes parts and returns the body and its Content-Type.
func multipartBody(t *testing.T, parts ...formPart) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disp := fmt.Sprintf(`form-data; name=%q`, p.name)
		if p.fileName != "" {
			disp += fmt.Sprintf(`; filename=%q`, p.fileName)
		}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write(p.data)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return &buf, w.FormDataContentType()
}

func (ts *testServer) upload(t *testing.T, key string, parts ...formPart) response {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	return ts.do(t, http.MethodPost, "/v1/context-documents", key, body, "Content-Type", ct)
}

func TestContextDocumentLifecycle(t *testing.T) {
	ts := newRulesServer(t)
	writer := mustKey(t, ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)

	d := createDoc(t, ts, writer, map[string]any{"title": "Phishing runbook", "document_type": "runbook",
		"description": "What to do", "content": "# Steps\n1. Pull the mail.", "tags": []string{"phishing", "email", "phishing"},
		"targeting_rules": map[string]any{"match_any": []any{map[string]any{"field": "severity", "op": "gte", "value": "high"}}}})
	id := d["uuid"].(string)
	for _, k := range []string{"uuid", "title", "document_type", "is_global", "description", "tags", "version", "created_at",
		"updated_at", "content", "targeting_rules"} {
		require.Contains(t, d, k)
	}
	require.EqualValues(t, 1, d["version"])
	require.Equal(t, false, d["is_global"])
	require.Equal(t, []any{"phishing", "email"}, d["tags"])
	require.Equal(t, writer[:8], d["created_by"])
	// Rules come back normalized: both lists, canonical severity.
	require.Equal(t, map[string]any{"match_all": []any{}, "match_any": []any{map[string]any{"field": "severity", "op": "gte", "value": "High"}}},
		d["targeting_rules"])

	got := ts.do(t, http.MethodGet, "/v1/context-documents/"+id, reader, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, d, got.JSON(t)["data"])

	// Minimal document: defaults.
	m := createDoc(t, ts, writer, map[string]any{"title": "SOP", "document_type": "sop", "content": "x", "targeting_rules": nil})
	require.Equal(t, []any{}, m["tags"])
	require.Nil(t, m["description"])
	require.Nil(t, m["targeting_rules"])
	empty := createDoc(t, ts, writer, map[string]any{"title": "SOP", "document_type": "sop", "content": "x", "targeting_rules": map[string]any{}})
	require.Nil(t, empty["targeting_rules"], "an empty rule set is stored as no rules")

	patch := func(body string) map[string]any {
		r := ts.do(t, http.MethodPatch, "/v1/context-documents/"+id, writer, body)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		return r.JSON(t)["data"].(map[string]any)
	}
	// Metadata changes keep the version.
	p := patch(`{"title": "Phishing runbook v2", "tags": ["mail"], "is_global": true, "description": null}`)
	require.EqualValues(t, 1, p["version"])
	require.Equal(t, "Phishing runbook v2", p["title"])
	require.Equal(t, []any{"mail"}, p["tags"])
	require.Equal(t, true, p["is_global"])
	require.Nil(t, p["description"])
	require.NotNil(t, p["targeting_rules"])
	// Content change: +1; the same content again: no change.
	require.EqualValues(t, 2, patch(`{"content": "# Steps\n1. Pull the mail.\n2. Block the sender."}`)["version"])
	require.EqualValues(t, 2, patch(`{"content": "# Steps\n1. Pull the mail.\n2. Block the sender."}`)["version"])
	require.EqualValues(t, 3, patch(`{"content": "rewritten", "document_type": "playbook"}`)["version"])
	// Rules replaced, then removed by null.
	p = patch(`{"targeting_rules": {"match_all": [{"field": "source_name", "op": "eq", "value": "splunk"}]}}`)
	require.Equal(t, []any{map[string]any{"field": "source_name", "op": "eq", "value": "splunk"}},
		p["targeting_rules"].(map[string]any)["match_all"])
	p = patch(`{"targeting_rules": null}`)
	require.Nil(t, p["targeting_rules"])
	require.EqualValues(t, 3, p["version"])
	require.Equal(t, "rewritten", p["content"])
	require.Equal(t, "playbook", p["document_type"])
	require.Equal(t, p, ts.do(t, http.MethodGet, "/v1/context-documents/"+id, reader, nil).JSON(t)["data"])

	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/context-documents/"+id, writer, nil).Status)
	requireError(t, ts.do(t, http.MethodGet, "/v1/context-documents/"+id, reader, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/context-documents/"+id, writer, `{"title": "x"}`), http.StatusNotFound, "NOT_FOUND")
	m2 := requireError(t, ts.do(t, http.MethodDelete, "/v1/context-documents/"+id, writer, nil), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "Context document not found.", m2["error"].(map[string]any)["message"])
	for _, bad := range []string{"nope", "' OR 1=1 --", strings.Repeat("f", 40)} {
		require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, ts.do(t, http.MethodGet, "/v1/context-documents/"+url.PathEscape(bad), reader, nil))))
		require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, ts.do(t, http.MethodDelete, "/v1/context-documents/"+url.PathEscape(bad), writer, nil))))
		require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts/"+url.PathEscape(bad)+"/context", reader, nil))))
	}
}

func TestContextDocumentScopes(t *testing.T) {
	ts := newRulesServer(t)
	writer := mustKey(t, ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	ingest := mustKey(t, ts.Store, auth.ScopeAlertsWrite)
	other := mustKey(t, ts.Store, auth.ScopeAgentsRead, auth.ScopeEnrichmentsRead)
	id := createDoc(t, ts, writer, map[string]any{"title": "t", "document_type": "other", "content": "c"})["uuid"].(string)
	alert := insertAlert(t, ts.Store, testAlertRow{})

	body := `{"title": "t", "document_type": "other", "content": "c"}`
	requireError(t, ts.do(t, http.MethodPost, "/v1/context-documents", reader, body), http.StatusForbidden, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/context-documents/"+id, reader, `{"title": "x"}`), http.StatusForbidden, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodDelete, "/v1/context-documents/"+id, reader, nil), http.StatusForbidden, "FORBIDDEN")
	for _, k := range []string{ingest, other} {
		requireError(t, ts.do(t, http.MethodPost, "/v1/context-documents", k, body), http.StatusForbidden, "FORBIDDEN")
		requireError(t, ts.do(t, http.MethodPatch, "/v1/context-documents/"+id, k, `{"title": "x"}`), http.StatusForbidden, "FORBIDDEN")
		requireError(t, ts.do(t, http.MethodDelete, "/v1/context-documents/"+id, k, nil), http.StatusForbidden, "FORBIDDEN")
	}
	for _, path := range []string{"/v1/context-documents", "/v1/context-documents/" + id, "/v1/alerts/" + alert.UUID.String() + "/context"} {
		require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, path, reader, nil).Status, path)
		requireError(t, ts.do(t, http.MethodGet, path, ingest, nil), http.StatusForbidden, "FORBIDDEN")
		requireError(t, ts.do(t, http.MethodGet, path, other, nil), http.StatusForbidden, "FORBIDDEN")
		requireError(t, ts.do(t, http.MethodGet, path, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	requireError(t, ts.do(t, http.MethodPost, "/v1/context-documents", "", body), http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestContextDocumentValidation(t *testing.T) {
	ts := newRulesServer(t)
	writer := mustKey(t, ts.Store, auth.ScopeAdmin)
	long := func(n int) string { return strings.Repeat("y", n) }
	ok := `"title": "t", "document_type": "sop", "content": "c"`
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"missing everything", `{}`, []string{"body.title", "body.document_type", "body.content"}},
		{"every field wrong at once", `{"title": 1, "document_type": "novel", "is_global": "yes", "description": [], "content": {}, "tags": "a,b",
			"targeting_rules": null}`,
			[]string{"body.title", "body.document_type", "body.is_global", "body.description", "body.content", "body.tags"}},
		{"empty strings", `{"title": "", "document_type": "", "content": ""}`, []string{"body.title", "body.document_type", "body.content"}},
		{"blank title", `{"title": " ", "document_type": "sop", "content": "c"}`, []string{"body.title"}},
		{"title too long", `{"title": "` + long(501) + `", "document_type": "sop", "content": "c"}`, []string{"body.title"}},
		{"description too long", `{` + ok + `, "description": "` + long(5001) + `"}`, []string{"body.description"}},
		{"content too large", `{"title": "t", "document_type": "sop", "content": "` + long(MaxContextDocumentBytes+1) + `"}`, []string{"body.content"}},
		{"too many tags", `{` + ok + `, "tags": [` + strings.Repeat(`"a",`, 50) + `"b"]}`, []string{"body.tags"}},
		{"bad tags", `{` + ok + `, "tags": ["", "fine", "` + long(101) + `"]}`, []string{"body.tags.0", "body.tags.2"}},
		{"tag of wrong type", `{` + ok + `, "tags": ["fine", {"x": 1}]}`, []string{"body.tags.1"}},
		{"NUL characters", `{"title": "a\u0000", "document_type": "sop", "content": "b\u0000", "description": "\u0000", "tags": ["\u0000"]}`,
			[]string{"body.title", "body.content", "body.description", "body.tags.0"}},
		{"unknown field", `{` + ok + `, "version": 9}`, []string{"body.version"}},
		{"rules not an object", `{` + ok + `, "targeting_rules": "severity=High"}`, []string{"body.targeting_rules"}},
		{"rules unknown key", `{` + ok + `, "targeting_rules": {"match_some": []}}`, []string{"body.targeting_rules.match_some"}},
		{"rules list not a list", `{` + ok + `, "targeting_rules": {"match_any": {"field": "title"}}}`, []string{"body.targeting_rules.match_any"}},
		{"bad rules named", `{` + ok + `, "targeting_rules": {"match_any": [{"field": "title", "op": "eq", "value": "ok"},
			{"field": "hostname", "op": "eq", "value": "x"}], "match_all": [{"field": "title", "op": "gte", "value": "High"},
			{"field": "severity", "op": "lte", "value": "Pending"}, {"field": "tags", "op": "in", "value": []},
			{"field": "source_name", "op": "eq"}, {"field": "title", "op": "eq", "value": "x", "extra": 1}, "rule"]}}`,
			[]string{"body.targeting_rules.match_any.1.field", "body.targeting_rules.match_all.0.op", "body.targeting_rules.match_all.1.value",
				"body.targeting_rules.match_all.2.value", "body.targeting_rules.match_all.3.value", "body.targeting_rules.match_all.4.extra",
				"body.targeting_rules.match_all.5"}},
		{"too many rules", `{` + ok + `, "targeting_rules": {"match_any": [` +
			strings.TrimSuffix(strings.Repeat(`{"field": "title", "op": "eq", "value": "x"},`, targeting.MaxRules+1), ",") + `]}}`,
			[]string{"body.targeting_rules.match_any"}},
		{"sql-ish severity", `{` + ok + `, "targeting_rules": {"match_any": [{"field": "severity", "op": "eq", "value": "High' OR 1=1 --"}]}}`,
			[]string{"body.targeting_rules.match_any.0.value"}},
		{"array body", `[]`, []string{"body"}},
		{"empty body", ``, []string{"body"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, "/v1/context-documents", writer, tc.body)
			require.ElementsMatch(t, tc.want, uniqueLocs(requireValidation(t, r)))
		})
	}
	t.Run("malformed json", func(t *testing.T) {
		requireError(t, ts.do(t, http.MethodPost, "/v1/context-documents", writer, `{"title": `), http.StatusBadRequest, "INVALID_JSON")
	})
	t.Run("wrong content types", func(t *testing.T) {
		for _, ct := range []string{"text/plain", "text/markdown", "application/x-www-form-urlencoded", "application/xml"} {
			r := ts.do(t, http.MethodPost, "/v1/context-documents", writer, strings.NewReader("title=t"), "Content-Type", ct)
			requireError(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		}
	})
	t.Run("content at the limit is accepted", func(t *testing.T) {
		d := createDoc(t, ts, writer, `{"title": "big", "document_type": "sop", "content": "`+long(MaxContextDocumentBytes)+`"}`)
		require.Len(t, d["content"], MaxContextDocumentBytes)
	})
	t.Run("body over the request limit", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/context-documents", writer, `{"title": "t", "document_type": "sop", "content": "`+long(11<<20)+`"}`)
		requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	})
	t.Run("hostile text is stored verbatim", func(t *testing.T) {
		title := `Robert'); DROP TABLE context_documents;-- <img src=x onerror=alert(1)>`
		d := createDoc(t, ts, writer, map[string]any{"title": title, "document_type": "other", "content": "%_\\' OR ''='"})
		got := ts.do(t, http.MethodGet, "/v1/context-documents/"+d["uuid"].(string), writer, nil).JSON(t)["data"].(map[string]any)
		require.Equal(t, title, got["title"])
		require.Equal(t, "%_\\' OR ''='", got["content"])
	})
	t.Run("patch", func(t *testing.T) {
		id := createDoc(t, ts, writer, map[string]any{"title": "p", "document_type": "sop", "content": "c"})["uuid"].(string)
		for _, tc := range []struct {
			name, body string
			want       []string
		}{
			{"bad values", `{"title": "", "document_type": "memo", "is_global": 1, "content": "", "tags": [""]}`,
				[]string{"body.title", "body.document_type", "body.is_global", "body.content", "body.tags.0"}},
			{"content too large", `{"content": "` + long(MaxContextDocumentBytes+1) + `"}`, []string{"body.content"}},
			{"bad rules", `{"targeting_rules": {"match_all": [{"field": "severity", "op": "gte", "value": "Urgent"}]}}`,
				[]string{"body.targeting_rules.match_all.0.value"}},
			{"unknown field", `{"uuid": "x"}`, []string{"body.uuid"}},
			{"NUL", `{"description": "\u0000"}`, []string{"body.description"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.ElementsMatch(t, tc.want, uniqueLocs(requireValidation(t, ts.do(t, http.MethodPatch, "/v1/context-documents/"+id, writer, tc.body))))
			})
		}
		got := ts.do(t, http.MethodGet, "/v1/context-documents/"+id, writer, nil).JSON(t)["data"].(map[string]any)
		require.Equal(t, "p", got["title"])
		require.EqualValues(t, 1, got["version"])
	})
}

func TestContextDocumentUpload(t *testing.T) {
	ts := newRulesServer(t)
	writer := mustKey(t, ts.Store, auth.ScopeAdmin)
	md := []byte("# Ransomware IR plan\n\nIsolate the host. Ünïcödé is fine.\n")

	t.Run("markdown file with fields", func(t *testing.T) {
		r := ts.upload(t, writer, formField("title", "IR plan"), formField("document_type", "ir_plan"), formField("is_global", "true"),
			formField("description", "desc"), formField("tags", "ransomware, ir"), formField("tags", "host"),
			formField("targeting_rules", `{"match_all": [{"field": "tags", "op": "contains", "value": "ransomware"}]}`),
			file("plan.md", "text/markdown", md))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		d := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "IR plan", d["title"])
		require.Equal(t, "ir_plan", d["document_type"])
		require.Equal(t, true, d["is_global"])
		require.Equal(t, "desc", d["description"])
		require.Equal(t, []any{"ransomware", "ir", "host"}, d["tags"])
		require.Equal(t, string(md), d["content"])
		require.EqualValues(t, 1, d["version"])
		require.NotNil(t, d["targeting_rules"])
	})
	t.Run("title defaults to the file name", func(t *testing.T) {
		for _, tc := range []struct{ fileName, ct, want string }{
			{"Phishing Runbook.md", "application/octet-stream", "Phishing Runbook"},
			{`C:\docs\triage notes.txt`, "text/plain", "triage notes"},
			{"../../etc/passwd.markdown", "", "passwd"},
		} {
			r := ts.upload(t, writer, formField("document_type", "runbook"), file(tc.fileName, tc.ct, []byte("hello")))
			require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
			require.Equal(t, tc.want, r.JSON(t)["data"].(map[string]any)["title"])
		}
	})
	t.Run("text part without extension; BOM stripped", func(t *testing.T) {
		r := ts.upload(t, writer, formField("title", "t"), formField("document_type", "sop"), file("notes", "text/plain; charset=utf-8",
			append([]byte("\xef\xbb\xbf"), "plain text"...)))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		require.Equal(t, "plain text", r.JSON(t)["data"].(map[string]any)["content"])
	})
	t.Run("content as a form field", func(t *testing.T) {
		r := ts.upload(t, writer, formField("title", "t"), formField("document_type", "sop"), formField("content", "inline"))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		require.Equal(t, "inline", r.JSON(t)["data"].(map[string]any)["content"])
	})

	big := bytes.Repeat([]byte("a"), MaxContextDocumentBytes+1)
	cases := []struct {
		name  string
		parts []formPart
		want  []string
	}{
		{"no file", []formPart{formField("title", "t"), formField("document_type", "sop")}, []string{"body.file"}},
		{"pdf", []formPart{formField("title", "t"), formField("document_type", "sop"), file("plan.pdf", "application/pdf", []byte("%PDF-1.7"))},
			[]string{"body.file"}},
		{"markdown name, image type", []formPart{formField("document_type", "sop"), file("x.md", "image/png", []byte("x"))}, []string{"body.file"}},
		{"executable", []formPart{formField("document_type", "sop"), file("run.exe", "application/octet-stream", []byte("MZ"))}, []string{"body.file"}},
		{"no extension, binary type", []formPart{formField("title", "t"), formField("document_type", "sop"), file("blob", "application/octet-stream", []byte("x"))},
			[]string{"body.file"}},
		{"not UTF-8", []formPart{formField("document_type", "sop"), file("latin1.txt", "text/plain", []byte("caf\xe9 cr\xe8me"))}, []string{"body.file"}},
		{"UTF-16", []formPart{formField("document_type", "sop"), file("u16.txt", "text/plain", []byte("\xff\xfeh\x00i\x00"))}, []string{"body.file"}},
		{"NUL bytes", []formPart{formField("document_type", "sop"), file("nul.md", "text/markdown", []byte("ab\x00cd"))}, []string{"body.file"}},
		{"empty file", []formPart{formField("document_type", "sop"), file("empty.md", "text/markdown", nil)}, []string{"body.file"}},
		{"BOM only", []formPart{formField("document_type", "sop"), file("bom.md", "text/markdown", []byte("\xef\xbb\xbf"))}, []string{"body.file"}},
		{"file too large", []formPart{formField("document_type", "sop"), file("big.md", "text/markdown", big)}, []string{"body.file"}},
		{"file and content", []formPart{formField("document_type", "sop"), formField("content", "x"), file("a.md", "text/markdown", []byte("y"))},
			[]string{"body.file"}},
		{"two files", []formPart{formField("document_type", "sop"), file("a.md", "text/markdown", []byte("a")), file("b.md", "text/markdown", []byte("b"))},
			[]string{"body.file"}},
		{"unknown fields", []formPart{formField("document_type", "sop"), formField("version", "7"), formPart{name: "attachment", fileName: "x.md", data: []byte("x")},
			file("a.md", "", []byte("a"))}, []string{"body.version", "body.attachment"}},
		{"bad values all reported", []formPart{formField("title", ""), formField("document_type", "memo"), formField("is_global", "maybe"),
			formField("targeting_rules", "[oops"), file("a.exe", "", []byte("a"))},
			[]string{"body.title", "body.document_type", "body.is_global", "body.targeting_rules", "body.file"}},
		{"bad boolean", []formPart{formField("document_type", "sop"), formField("is_global", "maybe"), file("a.md", "", []byte("a"))}, []string{"body.is_global"}},
		{"targeting rules not JSON", []formPart{formField("document_type", "sop"), formField("targeting_rules", "{match_any"), file("a.md", "", []byte("a"))},
			[]string{"body.targeting_rules"}},
		{"bad targeting rule", []formPart{formField("document_type", "sop"), file("a.md", "", []byte("a")),
			formField("targeting_rules", `{"match_any": [{"field": "severity", "op": "gte", "value": "Pending"}]}`)},
			[]string{"body.targeting_rules.match_any.0.value"}},
		{"repeated scalar field", []formPart{formField("document_type", "sop"), formField("document_type", "runbook"), file("a.md", "", []byte("a"))},
			[]string{"body.document_type"}},
		{"field not UTF-8", []formPart{formField("title", "\xff"), formField("document_type", "sop"), file("a.md", "", []byte("a"))}, []string{"body.title"}},
		{"field too large", []formPart{formField("description", strings.Repeat("d", maxMultipartFieldBytes+1)), formField("document_type", "sop"),
			file("a.md", "", []byte("a"))}, []string{"body.description"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ElementsMatch(t, tc.want, uniqueLocs(requireValidation(t, ts.upload(t, writer, tc.parts...))))
		})
	}

	t.Run("malformed multipart", func(t *testing.T) {
		for name, tc := range map[string]struct{ body, ct string }{
			"no boundary":       {"--x\r\n\r\nhello\r\n--x--\r\n", "multipart/form-data"},
			"wrong boundary":    {"--x\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nt\r\n--x--\r\n", "multipart/form-data; boundary=y"},
			"truncated":         {"--x\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nt", "multipart/form-data; boundary=x"},
			"part without name": {"--x\r\nContent-Disposition: form-data\r\n\r\nt\r\n--x--\r\n", "multipart/form-data; boundary=x"},
			"garbage":           {"\x00\x01\x02", "multipart/form-data; boundary=x"},
			"bad media params":  {"x", "multipart/form-data; boundary"},
		} {
			t.Run(name, func(t *testing.T) {
				r := ts.do(t, http.MethodPost, "/v1/context-documents", writer, strings.NewReader(tc.body), "Content-Type", tc.ct)
				require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, r.Status, string(r.Body))
				if r.Status == http.StatusBadRequest {
					requireError(t, r, http.StatusBadRequest, "INVALID_MULTIPART")
				} else {
					requireValidation(t, r)
				}
			})
		}
	})
	t.Run("too many parts", func(t *testing.T) {
		parts := []formPart{formField("document_type", "sop"), file("a.md", "", []byte("a"))}
		for range maxMultipartParts {
			parts = append(parts, formField("tags", "t"))
		}
		requireError(t, ts.upload(t, writer, parts...), http.StatusBadRequest, "INVALID_MULTIPART")
	})
	t.Run("compressed multipart refused", func(t *testing.T) {
		body, ct := multipartBody(t, formField("document_type", "sop"), file("a.md", "", []byte("a")))
		r := ts.do(t, http.MethodPost, "/v1/context-documents", writer, body, "Content-Type", ct, "Content-Encoding", "gzip")
		requireError(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	})
	t.Run("upload over the request body limit", func(t *testing.T) {
		huge := bytes.Repeat([]byte("z"), 11<<20)
		requireError(t, ts.upload(t, writer, formField("document_type", "sop"), file("huge.md", "text/markdown", huge)),
			http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	})
}

func TestContextDocumentListFiltersAndSorts(t *testing.T) {
	ts := newRulesServer(t)
	writer := mustKey(t, ts.Store, auth.ScopeAdmin)
	mark := "k" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	seed := []map[string]any{
		{"title": mark + " delta", "document_type": "sop", "content": "c", "is_global": true},
		{"title": mark + " Alpha", "document_type": "runbook", "content": "c", "description": "contains NEEDLE_1"},
		{"title": mark + " charlie", "document_type": "playbook", "content": "c"},
		{"title": mark + " bravo 50%", "document_type": "runbook", "content": "c", "is_global": true},
	}
	var ids []string
	for _, b := range seed {
		ids = append(ids, createDoc(t, ts, writer, b)["uuid"].(string))
		time.Sleep(2 * time.Millisecond)
	}
	// Touch "charlie" so updated_at differs from created_at order.
	time.Sleep(2 * time.Millisecond)
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPatch, "/v1/context-documents/"+ids[2], writer, `{"tags": ["x"]}`).Status)

	titles := func(query string) []string {
		items := dataList(t, ts.do(t, http.MethodGet, "/v1/context-documents?page_size=500&q="+mark+query, writer, nil))
		out := make([]string, len(items))
		for i, it := range items {
			require.NotContains(t, it, "content", "list items are summaries")
			require.Contains(t, it, "targeting_rules")
			out[i] = strings.TrimPrefix(it["title"].(string), mark+" ")
		}
		return out
	}
	cases := []struct {
		name, query string
		want        []string
	}{
		{"default: updated_at desc", "", []string{"charlie", "bravo 50%", "Alpha", "delta"}},
		{"updated_at asc", "&sort_by=updated_at&sort_order=asc", []string{"delta", "Alpha", "bravo 50%", "charlie"}},
		{"created_at desc", "&sort_by=created_at", []string{"bravo 50%", "charlie", "Alpha", "delta"}},
		{"created_at asc", "&sort_by=created_at&sort_order=asc", []string{"delta", "Alpha", "charlie", "bravo 50%"}},
		{"title asc, case-insensitive", "&sort_by=title", []string{"Alpha", "bravo 50%", "charlie", "delta"}},
		{"title desc", "&sort_by=title&sort_order=desc", []string{"delta", "charlie", "bravo 50%", "Alpha"}},
		{"document_type asc then title", "&sort_by=document_type", []string{"charlie", "Alpha", "bravo 50%", "delta"}},
		{"document_type desc", "&sort_by=document_type&sort_order=desc", []string{"delta", "Alpha", "bravo 50%", "charlie"}},
		{"document_type filter", "&sort_by=title&document_type=runbook", []string{"Alpha", "bravo 50%"}},
		{"document_type multi", "&sort_by=title&document_type=sop,playbook", []string{"charlie", "delta"}},
		{"is_global true", "&sort_by=title&is_global=true", []string{"bravo 50%", "delta"}},
		{"is_global false", "&sort_by=title&is_global=false", []string{"Alpha", "charlie"}},
		{"q matches title case-insensitively", "%20CHARLIE", []string{"charlie"}},
		{"q percent literal", "%20bravo%2050%25", []string{"bravo 50%"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, titles(tc.query)) })
	}
	t.Run("q matches description", func(t *testing.T) {
		items := dataList(t, ts.do(t, http.MethodGet, "/v1/context-documents?q=needle_1", writer, nil))
		require.Equal(t, []any{ids[1]}, field(items, "uuid"))
	})
	t.Run("pagination", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/context-documents?sort_by=title&page=2&page_size=3&q="+mark, writer, nil)
		require.Len(t, dataList(t, r), 1)
		meta := r.JSON(t)["meta"].(map[string]any)
		require.EqualValues(t, 4, meta["total"])
		require.EqualValues(t, 2, meta["total_pages"])
	})
	t.Run("bad query", func(t *testing.T) {
		for _, tc := range []struct{ query, want string }{
			{"document_type=memo", "query.document_type.0"},
			{"document_type=sop,memo", "query.document_type.1"},
			{"is_global=2", "query.is_global"},
			{"sort_by=content", "query.sort_by"},
			{"sort_order=sideways", "query.sort_order"},
			{"page=-1", "query.page"},
			{"page_size=0", "query.page_size"},
			{"q=%00", "query.q"},
			{"q=%80", "query.q"},
			{"q=" + strings.Repeat("q", 501), "query.q"},
		} {
			require.Equal(t, []string{tc.want}, locs(requireValidation(t, ts.do(t, http.MethodGet, "/v1/context-documents?"+tc.query, writer, nil))), tc.query)
		}
	})
}

func TestAlertContextDocuments(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	mark := "ctx" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")

	rule := createRule(t, ts, admin, map[string]any{"name": mark + " Brute force", "mitre_tactics": []string{"TA0006", "Credential Access"}})
	rid := ruleID(t, ts.Store, rule["uuid"].(string))
	rules := func(kind string, rs ...map[string]any) map[string]any { return map[string]any{kind: rs} }
	cond := func(f, op string, v any) map[string]any { return map[string]any{"field": f, "op": op, "value": v} }
	docs := map[string]map[string]any{
		"global B":      {"is_global": true},
		"global A":      {"is_global": true, "targeting_rules": rules("match_all", cond("severity", "eq", "Low"))},
		"no rules":      {},
		"high+":         {"targeting_rules": rules("match_all", cond("severity", "gte", "High"))},
		"medium-":       {"targeting_rules": rules("match_all", cond("severity", "lte", "Medium"))},
		"splunk":        {"targeting_rules": rules("match_any", cond("source_name", "eq", "SPLUNK"))},
		"not splunk":    {"targeting_rules": rules("match_all", cond("source_name", "neq", "splunk"))},
		"src in":        {"targeting_rules": rules("match_any", cond("source_name", "in", []string{"elastic", "sentinel"}))},
		"vpn tag":       {"targeting_rules": rules("match_any", cond("tags", "contains", "VPN"))},
		"title":         {"targeting_rules": rules("match_any", cond("title", "contains", "brute"))},
		"rule name":     {"targeting_rules": rules("match_any", cond("detection_rule.name", "eq", mark+" brute force"))},
		"tactic":        {"targeting_rules": rules("match_any", cond("detection_rule.mitre_tactics", "eq", "credential access"))},
		"all and any":   {"targeting_rules": map[string]any{"match_all": []any{cond("severity", "gte", "Medium")}, "match_any": []any{cond("tags", "in", []string{"prod", "pci"}), cond("title", "contains", "root")}}},
		"critical only": {"targeting_rules": rules("match_all", cond("severity", "gte", "Critical"), cond("severity", "lte", "Critical"))},
	}
	byTitle := map[string]string{}
	for name, extra := range docs {
		body := map[string]any{"title": mark + " " + name, "document_type": "runbook", "content": "content of " + name}
		for k, v := range extra {
			body[k] = v
		}
		byTitle[createDoc(t, ts, admin, body)["uuid"].(string)] = name
	}

	applied := func(alert testAlertRow) []string {
		r := ts.do(t, http.MethodGet, "/v1/alerts/"+alert.UUID.String()+"/context", reader, nil)
		items := dataList(t, r)
		require.EqualValues(t, len(items), r.JSON(t)["meta"].(map[string]any)["total"])
		var out []string
		seenTargeted := false
		for _, it := range items {
			if it["is_global"] == true {
				require.False(t, seenTargeted, "global documents come first")
			} else {
				seenTargeted = true
			}
			if name, ok := byTitle[it["uuid"].(string)]; ok {
				require.Equal(t, "content of "+name, it["content"], "full documents")
				out = append(out, name)
			}
		}
		return out
	}
	cases := []struct {
		name  string
		alert testAlertRow
		want  []string // globals by title, then targeted by title
	}{
		{"high splunk alert with the rule", testAlertRow{Severity: "High", SourceName: "splunk", Title: "SSH brute force", DetectionRuleID: &rid},
			[]string{"global A", "global B", "high+", "rule name", "splunk", "tactic", "title"}},
		{"critical elastic with vpn tag", testAlertRow{Severity: "Critical", SourceName: "elastic", Title: "x", Tags: []string{"vpn"}},
			[]string{"global A", "global B", "critical only", "high+", "not splunk", "src in", "vpn tag"}},
		{"low sentinel", testAlertRow{Severity: "Low", SourceName: "sentinel", Title: "x"},
			[]string{"global A", "global B", "medium-", "not splunk", "src in"}},
		{"medium: both ranges' edge and match_all+match_any", testAlertRow{Severity: "Medium", SourceName: "generic", Title: "root login", Tags: []string{"ops"}},
			[]string{"global A", "global B", "all and any", "medium-", "not splunk"}},
		{"match_any fails: no listed tag, no title", testAlertRow{Severity: "Medium", SourceName: "generic", Title: "x", Tags: []string{"ops"}},
			[]string{"global A", "global B", "medium-", "not splunk"}},
		{"pending is not on the rank scale", testAlertRow{Severity: "Pending", SourceName: "generic", Title: "x", Tags: []string{"pci"}},
			[]string{"global A", "global B", "not splunk"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := insertAlert(t, ts.Store, tc.alert)
			got := applied(a)
			require.Equal(t, tc.want, got)
		})
	}

	t.Run("store API: subject and applicable documents", func(t *testing.T) {
		a := insertAlert(t, ts.Store, testAlertRow{Severity: "High", SourceName: "splunk", Title: "SSH brute force", Tags: []string{"t"}, DetectionRuleID: &rid})
		subj, err := ts.Store.AlertSubject(context.Background(), a.UUID)
		require.NoError(t, err)
		require.Equal(t, targeting.Subject{SourceName: "splunk", Severity: "High", Title: "SSH brute force", Tags: []string{"t"},
			RuleName: mark + " Brute force", RuleTactics: []string{"TA0006", "Credential Access"}}, subj)
		r, err := ts.Store.GetDetectionRuleByID(context.Background(), rid)
		require.NoError(t, err)
		require.Equal(t, subj, store.SubjectFor("splunk", "High", "SSH brute force", []string{"t"}, &r))
		require.Equal(t, targeting.Subject{SourceName: "s", Severity: "Low", Title: "x"}, store.SubjectFor("s", "Low", "x", nil, nil))
		got, err := ts.Store.ApplicableContextDocuments(context.Background(), subj)
		require.NoError(t, err)
		var names []string
		for _, d := range got {
			if n, ok := byTitle[d.UUID.String()]; ok {
				require.Equal(t, "content of "+n, d.Content)
				names = append(names, n)
			}
		}
		require.Equal(t, []string{"global A", "global B", "high+", "rule name", "splunk", "tactic", "title"}, names)

		_, err = ts.Store.AlertSubject(context.Background(), uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
	})
	t.Run("rule deleted: rule fields no longer match", func(t *testing.T) {
		tmp := createRule(t, ts, admin, map[string]any{"name": mark + " Brute force", "mitre_tactics": []string{"Credential Access"}})
		tid := ruleID(t, ts.Store, tmp["uuid"].(string))
		a := insertAlert(t, ts.Store, testAlertRow{Severity: "Informational", SourceName: "splunk", Title: "x", DetectionRuleID: &tid})
		require.Equal(t, []string{"global A", "global B", "medium-", "rule name", "splunk", "tactic"}, applied(a))
		require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/detection-rules/"+tmp["uuid"].(string), admin, nil).Status)
		require.Equal(t, []string{"global A", "global B", "medium-", "splunk"}, applied(a))
	})
	t.Run("unknown alert", func(t *testing.T) {
		m := requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/context", reader, nil), http.StatusNotFound, "NOT_FOUND")
		require.Equal(t, "Alert not found.", m["error"].(map[string]any)["message"])
	})
}
