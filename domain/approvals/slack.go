package approvals

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Slack request signing (https://api.slack.com/authentication/verifying-requests-from-slack).
const (
	SlackSignatureHeader = "X-Slack-Signature"
	SlackTimestampHeader = "X-Slack-Request-Timestamp"
	SlackWindow          = 5 * time.Minute
	ActionApprove        = "vigil_approve"
	ActionReject         = "vigil_reject"
)

// Slack verification errors.
var (
	ErrSlackSignature = errors.New("slack signature does not match")
	ErrSlackStale     = errors.New("slack request timestamp outside the 5-minute window")
	ErrSlackPayload   = errors.New("slack payload is not a Vigil approval action")
)

// SlackSignature returns the v0 signature of body sent at timestamp.
func SlackSignature(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + timestamp + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// VerifySlack checks a callback's v0 signature (constant-time) and that its timestamp is within
// SlackWindow of now, either way.
func VerifySlack(secret, timestamp, signature string, body []byte, now time.Time) error {
	if secret == "" {
		return errors.New("slack signing secret is not configured")
	}
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		return ErrSlackStale
	}
	d := now.Sub(time.Unix(ts, 0))
	if d > SlackWindow || d < -SlackWindow {
		return ErrSlackStale
	}
	want := SlackSignature(secret, timestamp, body)
	if !hmac.Equal([]byte(want), []byte(strings.TrimSpace(signature))) {
		return ErrSlackSignature
	}
	return nil
}

// SlackAction is an Approve or Reject button press.
type SlackAction struct {
	ApprovalUUID uuid.UUID
	Approve      bool
	UserID       string
	UserName     string
	TeamID       string
	ResponseURL  string
}

// ParseSlackCallback decodes a block_actions interaction (form field payload=JSON).
func ParseSlackCallback(body []byte) (SlackAction, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return SlackAction{}, fmt.Errorf("%w: form: %v", ErrSlackPayload, err)
	}
	var p struct {
		Type string `json:"type"`
		User struct {
			ID       string `json:"id"`
			Username string `json:"username"`
			Name     string `json:"name"`
		} `json:"user"`
		Team struct {
			ID string `json:"id"`
		} `json:"team"`
		ResponseURL string `json:"response_url"`
		Actions     []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(form.Get("payload")), &p); err != nil {
		return SlackAction{}, fmt.Errorf("%w: %v", ErrSlackPayload, err)
	}
	if p.Type != "block_actions" || len(p.Actions) != 1 || p.User.ID == "" {
		return SlackAction{}, ErrSlackPayload
	}
	a := SlackAction{UserID: p.User.ID, UserName: p.User.Username, TeamID: p.Team.ID, ResponseURL: p.ResponseURL}
	if a.UserName == "" {
		a.UserName = p.User.Name
	}
	switch p.Actions[0].ActionID {
	case ActionApprove:
		a.Approve = true
	case ActionReject:
	default:
		return SlackAction{}, ErrSlackPayload
	}
	id, err := uuid.Parse(p.Actions[0].Value)
	if err != nil {
		return SlackAction{}, fmt.Errorf("%w: approval id", ErrSlackPayload)
	}
	a.ApprovalUUID = id
	return a, nil
}

// SlackMessage is the chat.postMessage body for r: a Block Kit message with the request's facts,
// Approve/Reject buttons carrying the approval id, and a link to the decide page.
func SlackMessage(r Request, channel, decideURL string) map[string]any {
	fields := []any{
		mrkdwn("*Workflow*\n" + slackEscape(r.WorkflowName)),
		mrkdwn("*Risk*\n" + slackEscape(r.RiskLevel)),
		mrkdwn("*Indicator*\n" + slackEscape(r.IndicatorType) + " `" + slackEscape(r.IndicatorValue) + "`"),
		mrkdwn("*Requested by*\n" + slackEscape(r.TriggerSource) + " " + slackEscape(r.TriggerKeyPrefix)),
		mrkdwn("*Confidence*\n" + r.ConfidenceText()),
		mrkdwn("*Expires*\n" + r.ExpiresAt.UTC().Format(time.RFC3339)),
	}
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": "Approval needed: " + truncate(r.WorkflowName, 120)}},
		map[string]any{"type": "section", "fields": fields},
	}
	if r.Reason != "" {
		blocks = append(blocks, map[string]any{"type": "section", "text": mrkdwn("*Reason*\n" + slackEscape(truncate(r.Reason, 2000)))})
	}
	blocks = append(blocks, map[string]any{"type": "section", "text": mrkdwn("*Steps (workflow version " + strconv.Itoa(r.WorkflowVersion) +
		")*\n```" + slackEscape(truncate(StepsText(r.Steps), 2500)) + "```")})
	elements := []any{
		map[string]any{"type": "button", "action_id": ActionApprove, "style": "primary", "value": r.UUID.String(),
			"text": map[string]any{"type": "plain_text", "text": "Approve"}},
		map[string]any{"type": "button", "action_id": ActionReject, "style": "danger", "value": r.UUID.String(),
			"text": map[string]any{"type": "plain_text", "text": "Reject"}},
	}
	if decideURL != "" {
		elements = append(elements, map[string]any{"type": "button", "action_id": "vigil_open", "url": decideURL,
			"text": map[string]any{"type": "plain_text", "text": "Open in browser"}})
	}
	blocks = append(blocks, map[string]any{"type": "actions", "block_id": "vigil_approval", "elements": elements})
	return map[string]any{"channel": channel, "text": "Approval needed: " + r.Summary(), "blocks": blocks}
}

func mrkdwn(s string) map[string]any { return map[string]any{"type": "mrkdwn", "text": s} }

// slackEscape escapes the three characters Slack's mrkdwn gives meaning to.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
