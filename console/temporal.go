package console

import (
	"net/url"
	"strconv"
)

// TemporalUI builds links to a workflow in the Temporal Web UI (TEMPORAL_UI_URL); an empty BaseURL
// links nothing.
type TemporalUI struct {
	BaseURL   string // e.g. http://127.0.0.1:8233, no trailing slash
	Namespace string
}

// Link is the UI's list of a workflow id's runs (the newest first), "" without a UI. The list (not one
// run's page) is linked because a re-run starts a new run under the same id.
func (t TemporalUI) Link(workflowID string) string {
	if t.BaseURL == "" || workflowID == "" {
		return ""
	}
	ns := t.Namespace
	if ns == "" {
		ns = "default"
	}
	return t.BaseURL + "/namespaces/" + url.PathEscape(ns) + "/workflows?query=" + url.QueryEscape("WorkflowId="+strconv.Quote(workflowID))
}
