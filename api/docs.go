package api

import (
	"bytes"
	"encoding/json"
	"html/template"
	"sort"
	"strings"
)

// renderDocs renders the OpenAPI document as one readable, script-free HTML page.
func renderDocs(doc map[string]any) []byte {
	type param struct {
		Name, In, Type, Desc string
		Required             bool
	}
	type op struct {
		Method, Path, Summary, Description, Scopes string
		Params                                     []param
		Body                                       string
		Responses                                  []string
	}
	type group struct {
		Tag string
		Ops []op
	}
	groups := map[string]*group{}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, raw := range item.(map[string]any) {
			o := raw.(map[string]any)
			tag := o["tags"].([]any)[0].(string)
			g := groups[tag]
			if g == nil {
				g = &group{Tag: tag}
				groups[tag] = g
			}
			x := op{Method: strings.ToUpper(method), Path: path, Summary: str(o["summary"]), Description: str(o["description"])}
			if sc, ok := o["x-required-scopes"].([]string); ok {
				x.Scopes = strings.Join(sc, ", ")
			} else if _, secured := o["security"]; !secured {
				x.Scopes = "public"
			}
			if ps, ok := o["parameters"].([]any); ok {
				for _, p := range ps {
					pm := p.(map[string]any)
					t, _ := json.Marshal(pm["schema"])
					x.Params = append(x.Params, param{Name: str(pm["name"]), In: str(pm["in"]), Type: string(t), Desc: str(pm["description"]), Required: pm["required"] == true})
				}
			}
			if rb, ok := o["requestBody"].(map[string]any); ok {
				b, _ := json.MarshalIndent(rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"], "", "  ")
				x.Body = string(b)
			}
			for code, r := range o["responses"].(map[string]any) {
				x.Responses = append(x.Responses, code+" "+str(r.(map[string]any)["description"]))
			}
			sort.Strings(x.Responses)
			g.Ops = append(g.Ops, x)
		}
	}
	var list []*group
	for _, g := range groups {
		sort.Slice(g.Ops, func(i, j int) bool {
			if g.Ops[i].Path != g.Ops[j].Path {
				return g.Ops[i].Path < g.Ops[j].Path
			}
			return g.Ops[i].Method < g.Ops[j].Method
		})
		list = append(list, g)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Tag < list[j].Tag })
	schemas, _ := json.MarshalIndent(doc["components"].(map[string]any)["schemas"], "", "  ")
	info := doc["info"].(map[string]any)
	var buf bytes.Buffer
	_ = docsTemplate.Execute(&buf, map[string]any{"Title": info["title"], "Version": info["version"], "Description": info["description"], "Groups": list, "Schemas": string(schemas)})
	return buf.Bytes()
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

var docsTemplate = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;color:#1d2430}
h1{margin-bottom:0}h2{border-bottom:1px solid #d0d7de;padding-bottom:.3rem;margin-top:2.5rem}
.op{border:1px solid #d0d7de;border-radius:6px;margin:1rem 0;padding:.6rem 1rem}
.m{display:inline-block;min-width:4.5rem;font-weight:700;font-family:monospace}
.GET{color:#0969da}.POST{color:#1a7f37}.PATCH{color:#9a6700}.DELETE{color:#cf222e}.PUT{color:#8250df}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:24rem}
table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:.2rem .5rem;text-align:left;vertical-align:top}
.scope{color:#57606a;font-size:13px}nav a{margin-right:.8rem}
</style></head><body>
<h1>{{.Title}}</h1><p>Version <code>{{.Version}}</code>. {{.Description}} Machine-readable: <a href="/openapi.json">/openapi.json</a>.</p>
<p>Every route but the public ones takes <code>Authorization: Bearer cai_…</code>. Success bodies are <code>{"data": …, "meta": {…}}</code>;
errors are <code>{"error": {"code", "message", "details"}}</code>, and 422 adds <code>detail: [{loc, msg, type, input?, ctx?}]</code> listing every problem.</p>
<nav>{{range .Groups}}<a href="#{{.Tag}}">{{.Tag}}</a>{{end}}</nav>
{{range .Groups}}<h2 id="{{.Tag}}">{{.Tag}}</h2>
{{range .Ops}}<div class="op"><div><span class="m {{.Method}}">{{.Method}}</span><code>{{.Path}}</code> — {{.Summary}}</div>
<div class="scope">Scope: {{if .Scopes}}{{.Scopes}}{{else}}any valid key{{end}}</div>
{{if .Description}}<p>{{.Description}}</p>{{end}}
{{if .Params}}<table><tr><th>Parameter</th><th>In</th><th>Schema</th><th>Description</th></tr>
{{range .Params}}<tr><td><code>{{.Name}}</code>{{if .Required}} *{{end}}</td><td>{{.In}}</td><td><code>{{.Type}}</code></td><td>{{.Desc}}</td></tr>{{end}}</table>{{end}}
{{if .Body}}<details><summary>Request body</summary><pre>{{.Body}}</pre></details>{{end}}
<div class="scope">Responses: {{range .Responses}}<code>{{.}}</code>; {{end}}</div></div>{{end}}{{end}}
<h2 id="schemas">Schemas</h2><pre>{{.Schemas}}</pre>
</body></html>`))
