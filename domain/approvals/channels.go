package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/webhooks"
)

// Notifier types (APPROVAL_NOTIFIER).
const (
	NotifierNone    = "none"
	NotifierSlack   = "slack"
	NotifierTeams   = "teams"
	NotifierWebhook = "webhook"
)

// NotifierTypes lists the accepted APPROVAL_NOTIFIER values.
func NotifierTypes() []string {
	return []string{NotifierNone, NotifierSlack, NotifierTeams, NotifierWebhook}
}

// Config is the approval channel configuration (from cmd/vigil's environment).
type Config struct {
	Type            string // none, slack, teams, webhook
	PublicBaseURL   string // base of decide-page links
	SlackBotToken   string
	SlackChannel    string // default channel; a workflow's approval_channel overrides it
	SlackAPIBaseURL string // default https://slack.com/api
	TeamsWebhookURL string
	WebhookURL      string
	WebhookSecret   string
}

// Doer sends one HTTP request (the SSRF-guarded client in production).
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Notifier sends approval requests to the configured channel.
type Notifier struct {
	cfg    Config
	client Doer
	now    func() time.Time
}

// NewNotifier returns a notifier sending through client.
func NewNotifier(cfg Config, client Doer) *Notifier {
	if cfg.Type == "" {
		cfg.Type = NotifierNone
	}
	if cfg.SlackAPIBaseURL == "" {
		cfg.SlackAPIBaseURL = "https://slack.com/api"
	}
	return &Notifier{cfg: cfg, client: client, now: time.Now}
}

// Type is the configured notifier type.
func (n *Notifier) Type() string { return n.cfg.Type }

// Channel is where a request with the workflow's channelOverride goes (Slack channel id), or nil for
// notifiers without channels.
func (n *Notifier) Channel(channelOverride string) *string {
	if n.cfg.Type != NotifierSlack {
		return nil
	}
	ch := n.cfg.SlackChannel
	if channelOverride != "" {
		ch = channelOverride
	}
	if ch == "" {
		return nil
	}
	return &ch
}

// PermanentError is a notification the channel refused in a way retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Notify sends r with a decide-page link built from token. channelOverride (a workflow's
// approval_channel) replaces the Slack channel. It returns the channel used (nil when the type has
// none).
func (n *Notifier) Notify(ctx context.Context, r Request, channelOverride string, token string) (*string, error) {
	decide := ""
	if token != "" && n.cfg.PublicBaseURL != "" {
		decide = DecideURL(n.cfg.PublicBaseURL, r.UUID, token)
	}
	switch n.cfg.Type {
	case NotifierNone:
		return nil, nil
	case NotifierSlack:
		ch := n.cfg.SlackChannel
		if channelOverride != "" {
			ch = channelOverride
		}
		if ch == "" || n.cfg.SlackBotToken == "" {
			return nil, &PermanentError{errors.New("slack notifier needs SLACK_BOT_TOKEN and a channel")}
		}
		body, _ := json.Marshal(SlackMessage(r, ch, decide))
		resp, err := n.post(ctx, strings.TrimRight(n.cfg.SlackAPIBaseURL, "/")+"/chat.postMessage", body,
			map[string]string{"Authorization": "Bearer " + n.cfg.SlackBotToken})
		if err != nil {
			return &ch, err
		}
		var ok struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if json.Unmarshal(resp, &ok) != nil || !ok.OK {
			return &ch, &PermanentError{fmt.Errorf("slack chat.postMessage: %s", ok.Error)}
		}
		return &ch, nil
	case NotifierTeams:
		if n.cfg.TeamsWebhookURL == "" {
			return nil, &PermanentError{errors.New("teams notifier needs TEAMS_WEBHOOK_URL")}
		}
		body, _ := json.Marshal(TeamsMessage(r, decide))
		_, err := n.post(ctx, n.cfg.TeamsWebhookURL, body, nil)
		return nil, err
	case NotifierWebhook:
		if n.cfg.WebhookURL == "" || n.cfg.WebhookSecret == "" {
			return nil, &PermanentError{errors.New("webhook notifier needs APPROVAL_WEBHOOK_URL and APPROVAL_WEBHOOK_SECRET")}
		}
		delivery := uuid.New()
		now := n.now().UTC()
		body := WebhookPayload(r, decide, delivery, now)
		ts := strconv.FormatInt(now.Unix(), 10)
		_, err := n.post(ctx, n.cfg.WebhookURL, body, map[string]string{
			webhooks.HeaderEvent: "approval.requested", webhooks.HeaderDelivery: delivery.String(),
			webhooks.HeaderTimestamp: ts, webhooks.HeaderSignature: webhooks.Sign(n.cfg.WebhookSecret, ts, body)})
		return nil, err
	}
	return nil, &PermanentError{fmt.Errorf("unknown notifier type %q", n.cfg.Type)}
}

func (n *Notifier) post(ctx context.Context, url string, body []byte, headers map[string]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, &PermanentError{fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post approval notification: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return raw, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return nil, fmt.Errorf("approval notification answered %d", resp.StatusCode)
	default:
		return nil, &PermanentError{fmt.Errorf("approval notification answered %d", resp.StatusCode)}
	}
}

// WebhookPayload is the approval.requested event body of the generic webhook (API.md §9 shape).
func WebhookPayload(r Request, decideURL string, delivery uuid.UUID, now time.Time) []byte {
	data := map[string]any{"approval_request": r}
	if decideURL != "" {
		data["decide_url"] = decideURL
	}
	body, _ := json.Marshal(map[string]any{"id": delivery.String(), "event": "approval.requested",
		"created_at": now.UTC().Format(time.RFC3339Nano), "data": data})
	return body
}

// TeamsMessage is an incoming-webhook message carrying an Adaptive Card with the request's facts
// and Approve/Reject links to the decide page (Teams cards cannot call back without a bot).
func TeamsMessage(r Request, decideURL string) map[string]any {
	facts := []any{
		map[string]any{"title": "Workflow", "value": r.WorkflowName},
		map[string]any{"title": "Risk", "value": r.RiskLevel},
		map[string]any{"title": "Indicator", "value": r.IndicatorType + " " + r.IndicatorValue},
		map[string]any{"title": "Requested by", "value": r.TriggerSource + " " + r.TriggerKeyPrefix},
		map[string]any{"title": "Confidence", "value": r.ConfidenceText()},
		map[string]any{"title": "Expires", "value": r.ExpiresAt.UTC().Format(time.RFC3339)},
	}
	body := []any{
		map[string]any{"type": "TextBlock", "size": "Medium", "weight": "Bolder", "wrap": true, "text": "Approval needed: " + r.WorkflowName},
		map[string]any{"type": "FactSet", "facts": facts},
	}
	if r.Reason != "" {
		body = append(body, map[string]any{"type": "TextBlock", "wrap": true, "text": "Reason: " + truncate(r.Reason, 2000)})
	}
	body = append(body, map[string]any{"type": "TextBlock", "wrap": true, "weight": "Bolder",
		"text": "Steps (workflow version " + strconv.Itoa(r.WorkflowVersion) + ")"},
		map[string]any{"type": "TextBlock", "wrap": true, "fontType": "Monospace", "text": truncate(StepsText(r.Steps), 2500)})
	var actions []any
	if decideURL != "" {
		actions = []any{
			map[string]any{"type": "Action.OpenUrl", "title": "Approve", "url": decideURL + "&decision=approve"},
			map[string]any{"type": "Action.OpenUrl", "title": "Reject", "url": decideURL + "&decision=reject"},
		}
	}
	card := map[string]any{"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
		"version": "1.4", "body": body, "actions": actions}
	return map[string]any{"type": "message", "attachments": []any{map[string]any{
		"contentType": "application/vnd.microsoft.card.adaptive", "content": card}}}
}
