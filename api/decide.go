package api

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

// The browser decide page: GET shows the request with Approve/Reject (plain HTML form, no
// JavaScript); POST decides once. The single-use token (only its SHA-256 is stored, compared in
// constant time) is the credential; a cross-site POST cannot know it, and a POST whose Origin is
// another site is refused as well.
func (s *Server) decideRoutes() {
	const tag = "Workflow approvals"
	s.add(route{Method: http.MethodGet, Path: "/v1/approvals/:uuid/decide", Tag: tag, Summary: "Browser decide page",
		Description: "Public, authenticated by the single-use token of the approval message. Server-rendered HTML; works without JavaScript. Opening it does not use the token.",
		Public:      true, Query: decideQuery{}, ContentType: "text/html"}, s.decidePage)
	s.add(route{Method: http.MethodPost, Path: "/v1/approvals/:uuid/decide", Tag: tag, Summary: "Decide from the browser page",
		Description: "Form post (application/x-www-form-urlencoded: decision=approve|reject, responder_name?, comment?). Uses the token.",
		Public:      true, Query: decideQuery{}, ContentType: "text/html"}, s.decideSubmit)
}

type decideQuery struct {
	Token    string `query:"token" doc:"The single-use token from the approval message."`
	Decision string `query:"decision" doc:"approve or reject: pre-selects a button (Teams card links); never decides by itself."`
}

var decideTemplate = template.Must(template.New("decide").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}} · Vigil</title>
<style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#1d2430}
table{border-collapse:collapse;width:100%}th{text-align:left;width:11rem;vertical-align:top}th,td{padding:.35rem;border-bottom:1px solid #ddd}
.status{font-weight:600}.approve{background:#1b7f3b;color:#fff}.reject{background:#b3261e;color:#fff}
button{font-size:1rem;padding:.5rem 1.2rem;border:0;border-radius:4px;margin-right:.5rem}.pre{outline:3px solid #f0b400}
textarea,input{width:100%;box-sizing:border-box;margin:.2rem 0 .8rem}</style></head>
<body><h1 id="title">{{.Title}}</h1>
{{if .Message}}<p id="message" class="status">{{.Message}}</p>{{end}}
{{if .A}}<table>
<tr><th>Workflow</th><td id="workflow">{{.A.WorkflowName}}</td></tr>
<tr><th>Risk</th><td>{{.A.RiskLevel}}</td></tr>
<tr><th>Indicator</th><td>{{.A.IndicatorType}} <code>{{.A.IndicatorValue}}</code></td></tr>
<tr><th>Requested by</th><td>{{.A.TriggerSource}} {{if .A.TriggerKeyPrefix}}{{.A.TriggerKeyPrefix}}{{end}}</td></tr>
<tr><th>Reason</th><td>{{if .A.Reason}}{{.A.Reason}}{{else}}—{{end}}</td></tr>
<tr><th>Confidence</th><td>{{.Confidence}}</td></tr>
<tr><th>Expires</th><td>{{.Expires}}</td></tr>
<tr><th>Approvals</th><td>{{.Approved}} of {{.A.RequiredApprovals}} required</td></tr>
<tr><th>Workflow version</th><td id="version">{{.Version}}</td></tr>
<tr><th>Steps</th><td><ol id="steps">{{range .Steps}}<li><code>{{.Method}} {{.Host}}{{.Path}}</code></li>{{end}}</ol></td></tr>
<tr><th>Status</th><td id="status" class="status">{{.A.Status}}</td></tr>
</table>{{end}}
{{if .Form}}<form method="post" action="{{.Action}}">
<label for="responder_name">Your name</label><input id="responder_name" name="responder_name" maxlength="200" autocomplete="name">
<label for="comment">Comment</label><textarea id="comment" name="comment" maxlength="5000" rows="3"></textarea>
<button type="submit" name="decision" value="approve" id="approve" class="approve{{if eq .Pre "approve"}} pre{{end}}">Approve</button>
<button type="submit" name="decision" value="reject" id="reject" class="reject{{if eq .Pre "reject"}} pre{{end}}">Reject</button>
</form>{{end}}
</body></html>`))

type decideView struct {
	Title, Message, Action, Pre, Confidence, Expires string
	A                                                *store.ApprovalRequest
	Approved                                         int
	Form                                             bool
	// Version and Steps: what runs if approved (the run's workflow version; method, host, path).
	Version int
	Steps   []approvals.Step
}

func (s *Server) renderDecide(c *fiber.Ctx, status int, v decideView) error {
	if v.A != nil {
		r := approvals.Request{Confidence: v.A.Confidence}
		v.Confidence = r.ConfidenceText()
		v.Expires = v.A.ExpiresAt.UTC().Format(time.RFC1123)
		v.Approved = v.A.Tally().Approvals
		if run, err := s.deps.Workflows.GetWorkflowRun(c.UserContext(), v.A.RunUUID); err == nil {
			v.Version = run.WorkflowVersion
			if def, err := s.deps.Workflows.GetWorkflowVersion(c.UserContext(), run.WorkflowUUID, run.WorkflowVersion); err == nil {
				v.Steps = approvals.Steps(def.Steps)
			}
		}
	}
	var buf bytes.Buffer
	if err := decideTemplate.Execute(&buf, v); err != nil {
		return err
	}
	c.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

var errDecideLink = errors.New("invalid decide link")

// decideLoad checks the path and token and loads the request. It never distinguishes an unknown
// request from a wrong token.
func (s *Server) decideLoad(c *fiber.Ctx) (store.ApprovalRequest, string, error) {
	id, err := uuid.Parse(c.Params("uuid"))
	tok := c.Query("token")
	if tok == "" {
		tok = c.FormValue("token")
	}
	if err != nil || !approvals.WellFormedToken(tok) {
		return store.ApprovalRequest{}, "", errDecideLink
	}
	a, err := s.deps.Workflows.GetApproval(c.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return store.ApprovalRequest{}, "", errDecideLink
	}
	if err != nil {
		return store.ApprovalRequest{}, "", err
	}
	return a, tok, nil
}

func (s *Server) decideLinkInvalid(c *fiber.Ctx) error {
	return s.renderDecide(c, http.StatusForbidden, decideView{Title: "Link not valid",
		Message: "This approval link is invalid or has already been used."})
}

func (s *Server) decidePage(c *fiber.Ctx) error {
	a, tok, err := s.decideLoad(c)
	if errors.Is(err, errDecideLink) {
		return s.decideLinkInvalid(c)
	}
	if err != nil {
		return err
	}
	// The token is checked first: nothing of the request is shown to anyone else.
	if !tokenMatches(a.DecideTokenHash, tok) {
		return s.decideLinkInvalid(c)
	}
	if a.Status != store.ApprovalPending || !time.Now().Before(a.ExpiresAt) || a.DecideTokenUsedAt != nil {
		msg := "This request is " + a.Status + "; it can no longer be decided."
		switch {
		case a.Status == store.ApprovalPending && a.DecideTokenUsedAt != nil:
			msg = "Your decision was recorded; the request is waiting for more approvals."
		case a.Status == store.ApprovalPending:
			msg = "This request has expired; it can no longer be decided."
		}
		return s.renderDecide(c, http.StatusOK, decideView{Title: "Approval request", Message: msg, A: &a})
	}
	pre := c.Query("decision")
	return s.renderDecide(c, http.StatusOK, decideView{Title: "Approval needed", A: &a, Form: true, Pre: pre,
		Action: "/v1/approvals/" + a.UUID.String() + "/decide?token=" + url.QueryEscape(tok)})
}

func tokenMatches(stored []byte, tok string) bool {
	if len(stored) == 0 {
		return false
	}
	return hmacEqual(stored, approvals.HashToken(tok))
}

func (s *Server) decideSubmit(c *fiber.Ctx) error {
	ct := strings.ToLower(string(c.Request().Header.ContentType()))
	if !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return s.renderDecide(c, http.StatusUnsupportedMediaType, decideView{Title: "Unsupported request", Message: "Submit the form on the approval page."})
	}
	if !s.sameOrigin(c) {
		return s.renderDecide(c, http.StatusForbidden, decideView{Title: "Cross-site request refused", Message: "Submit the form on the approval page."})
	}
	a, tok, err := s.decideLoad(c)
	if errors.Is(err, errDecideLink) {
		return s.decideLinkInvalid(c)
	}
	if err != nil {
		return err
	}
	decision := c.FormValue("decision")
	if decision != "approve" && decision != "reject" {
		return s.renderDecide(c, http.StatusUnprocessableEntity, decideView{Title: "Choose a decision", Message: "Press Approve or Reject.", A: &a})
	}
	var comment *string
	if cm := strings.TrimSpace(c.FormValue("comment")); cm != "" {
		if len([]rune(cm)) > 5000 {
			cm = string([]rune(cm)[:5000])
		}
		comment = &cm
	}
	decided, err := s.responses.Decide(c.UserContext(), a.UUID, responses.ByDecidePage(tok, c.FormValue("responder_name")), decision == "approve", comment)
	if err != nil {
		var apiErr *Error
		mapped := decisionError(err)
		if errors.Is(err, responses.ErrDecideToken) {
			return s.decideLinkInvalid(c)
		}
		if errors.As(mapped, &apiErr) {
			fresh, gerr := s.deps.Workflows.GetApproval(c.UserContext(), a.UUID)
			if gerr != nil {
				return gerr
			}
			return s.renderDecide(c, apiErr.Status, decideView{Title: "Not recorded", Message: apiErr.Message, A: &fresh})
		}
		return err
	}
	msg := "Your decision was recorded: " + map[bool]string{true: "approved", false: "rejected"}[decision == "approve"] + "."
	return s.renderDecide(c, http.StatusOK, decideView{Title: "Decision recorded", Message: msg, A: &decided})
}

// sameOrigin refuses a POST whose Origin (or, without one, Sec-Fetch-Site) says it came from
// another site. Requests without either (non-browser clients) rely on the token alone.
func (s *Server) sameOrigin(c *fiber.Ctx) bool {
	if origin := c.Get("Origin"); origin != "" && origin != "null" {
		u, err := url.Parse(origin)
		if err != nil {
			return false
		}
		if strings.EqualFold(u.Host, string(c.Request().Host())) {
			return true
		}
		if s.cfg.PublicBaseURL != "" {
			if pb, err := url.Parse(s.cfg.PublicBaseURL); err == nil && strings.EqualFold(pb.Host, u.Host) && pb.Scheme == u.Scheme {
				return true
			}
		}
		return false
	}
	switch c.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

func hmacEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
