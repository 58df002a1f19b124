package approvals

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/kit/httpsteps"
)

// Step is what an approver is shown of one step of the workflow version a run executes: its method,
// host and path as the workflow defines them (templates as written, e.g. "{{indicator.value}}",
// never a rendered value, so no secret or response value is shown).
type Step struct {
	Name   string `json:"name"`
	Method string `json:"method"`
	Host   string `json:"host"`
	Path   string `json:"path"`
}

// Steps summarises a workflow version's stored steps for approvers; unparsable steps give none.
func Steps(raw json.RawMessage) []Step {
	var steps []httpsteps.Step
	if err := json.Unmarshal(raw, &steps); err != nil {
		return []Step{}
	}
	out := make([]Step, 0, len(steps))
	for _, st := range steps {
		method := strings.ToUpper(st.Method)
		if method == "" {
			method = httpsteps.DefaultMethod
		}
		host, path := splitURLTemplate(st.URL)
		out = append(out, Step{Name: st.Name, Method: method, Host: host, Path: path})
	}
	return out
}

// splitURLTemplate splits a URL template into its authority and its path (without the query, which
// may carry credentials).
func splitURLTemplate(u string) (host, path string) {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	host, path = rest, "/"
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if path == "" {
		path = "/"
	}
	if i := strings.LastIndex(host, "@"); i >= 0 && !strings.Contains(host[:i], "{{") {
		host = host[i+1:] // never show userinfo
	}
	return host, path
}

// StepsText is the steps as lines, "1. POST host/path", for text channels.
func StepsText(steps []Step) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(i+1) + ". " + s.Method + " " + s.Host + s.Path)
	}
	return b.String()
}
