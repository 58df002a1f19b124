package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/webhooks"
)

func TestNeeded(t *testing.T) {
	cases := []struct {
		mode, trigger string
		want          bool
	}{
		{ModeAlways, TriggerHuman, true},
		{ModeAlways, TriggerAgent, true},
		{ModeAgentOnly, TriggerHuman, false},
		{ModeAgentOnly, TriggerAgent, true},
		{ModeAgentOnly, "", true}, // unknown trigger: fail closed
		{ModeAgentOnly, "Human", true},
		{ModeNever, TriggerHuman, false},
		{ModeNever, TriggerAgent, false},
		{"", TriggerHuman, true}, // unknown mode: fail closed
		{"sometimes", TriggerAgent, true},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, Needed(tc.mode, tc.trigger), "%s/%s", tc.mode, tc.trigger)
	}
}

func TestExpiresAt(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("x", 3600))
	require.Equal(t, time.Date(2026, 11, 22, 9, 0, 2, 0, time.UTC), ExpiresAt(now, 2))
}

func TestTokens(t *testing.T) {
	a, ha, err := NewToken()
	require.NoError(t, err)
	b, hb, err := NewToken()
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.NotEqual(t, ha, hb)
	require.Equal(t, ha, HashToken(a))
	require.Len(t, ha, 32)
	require.True(t, WellFormedToken(a))
	for _, bad := range []string{"", "abc", a + "x", a[:len(a)-1] + "!", strings.Repeat("é", 43)} {
		require.False(t, WellFormedToken(bad), bad)
	}
	u := DecideURL("https://vigil.example.com/", uuid.MustParse("6f1c1f3e-8d2a-4a53-9a52-0b1f0c3b9e10"), a)
	require.Equal(t, "https://vigil.example.com/v1/approvals/6f1c1f3e-8d2a-4a53-9a52-0b1f0c3b9e10/decide?token="+a, u)
}

func TestVerifySlack(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte("payload=%7B%7D")
	ts := strconv.FormatInt(now.Unix(), 10)
	good := SlackSignature("secret", ts, body)
	require.True(t, strings.HasPrefix(good, "v0="))
	require.NoError(t, VerifySlack("secret", ts, good, body, now))
	require.NoError(t, VerifySlack("secret", ts, good, body, now.Add(299*time.Second)))
	cases := []struct {
		name, secret, ts, sig string
		body                  []byte
		now                   time.Time
		want                  error
	}{
		{"wrong secret", "other", ts, good, body, now, ErrSlackSignature},
		{"body changed", "secret", ts, good, []byte("payload=%7B%7D "), now, ErrSlackSignature},
		{"no signature", "secret", ts, "", body, now, ErrSlackSignature},
		{"v1 prefix", "secret", ts, "v1=" + good[3:], body, now, ErrSlackSignature},
		{"stale", "secret", ts, good, body, now.Add(301 * time.Second), ErrSlackStale},
		{"future", "secret", ts, good, body, now.Add(-301 * time.Second), ErrSlackStale},
		{"no timestamp", "secret", "", good, body, now, ErrSlackStale},
		{"junk timestamp", "secret", "17e8", good, body, now, ErrSlackStale},
		{"huge timestamp", "secret", "99999999999999999999999", good, body, now, ErrSlackStale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, VerifySlack(tc.secret, tc.ts, tc.sig, tc.body, tc.now), tc.want)
		})
	}
	require.Error(t, VerifySlack("", ts, good, body, now), "no secret configured never verifies")
}

func slackPayload(t *testing.T, v any) []byte {
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return []byte(url.Values{"payload": {string(raw)}}.Encode())
}

func TestParseSlackCallback(t *testing.T) {
	id := uuid.New()
	ok := map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1", "username": "alice"}, "team": map[string]any{"id": "T1"},
		"actions": []any{map[string]any{"action_id": ActionReject, "value": id.String()}}}
	a, err := ParseSlackCallback(slackPayload(t, ok))
	require.NoError(t, err)
	require.Equal(t, SlackAction{ApprovalUUID: id, Approve: false, UserID: "U1", UserName: "alice", TeamID: "T1"}, a)

	bad := []any{
		map[string]any{"type": "view_submission"},
		map[string]any{"type": "block_actions", "user": map[string]any{"id": ""}, "actions": []any{map[string]any{"action_id": ActionApprove, "value": id.String()}}},
		map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1"}, "actions": []any{}},
		map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1"}, "actions": []any{map[string]any{"action_id": "x", "value": id.String()}}},
		map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1"}, "actions": []any{map[string]any{"action_id": ActionApprove, "value": "not-a-uuid"}}},
		map[string]any{"type": "block_actions", "user": "U1"},
		[]any{1, 2},
	}
	for i, b := range bad {
		_, err := ParseSlackCallback(slackPayload(t, b))
		require.ErrorIs(t, err, ErrSlackPayload, "case %d", i)
	}
	for _, raw := range []string{"", "payload=", "payload=%7B", "%zz", strings.Repeat("a", 100000)} {
		_, err := ParseSlackCallback([]byte(raw))
		require.ErrorIs(t, err, ErrSlackPayload, raw[:min(len(raw), 20)])
	}
}

func FuzzParseSlackCallback(f *testing.F) {
	f.Add([]byte("payload=%7B%22type%22%3A%22block_actions%22%7D"))
	f.Add([]byte("payload=" + url.QueryEscape(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"vigil_approve","value":"6f1c1f3e-8d2a-4a53-9a52-0b1f0c3b9e10"}]}`)))
	f.Add([]byte("%zz"))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := ParseSlackCallback(body)
		if err == nil && (a.ApprovalUUID == uuid.Nil || a.UserID == "") {
			t.Fatalf("accepted without approval id or user: %+v", a)
		}
	})
}

func sampleRequest() Request {
	c := 0.85
	return Request{UUID: uuid.MustParse("6f1c1f3e-8d2a-4a53-9a52-0b1f0c3b9e10"), RunUUID: uuid.New(), WorkflowName: "Block <IP> & co",
		RiskLevel: "high", IndicatorType: "ip", IndicatorValue: "203.0.113.5", TriggerSource: "agent", TriggerKeyPrefix: "cai_abcd",
		Reason: "beacon", Confidence: &c, RequiredApprovals: 1, ExpiresAt: time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC),
		WorkflowVersion: 3, Steps: Steps(json.RawMessage(`[{"name":"block","method":"post",
			"url":"https://fw.example.com/api/block/{{indicator.value}}?key={{secrets.FW_KEY}}","headers":{"X-Key":"{{secrets.FW_KEY}}"}},
			{"name":"org","url":"{{secrets.OKTA_ORG_URL}}/api/v1/users/{{indicator.value}}/sessions"}]`))}
}

// Approvers see what will run: each step's method, host and path as defined (no query, no header,
// nothing rendered) and the workflow version.
func TestSteps(t *testing.T) {
	r := sampleRequest()
	require.Equal(t, []Step{{Name: "block", Method: "POST", Host: "fw.example.com", Path: "/api/block/{{indicator.value}}"},
		{Name: "org", Method: "GET", Host: "{{secrets.OKTA_ORG_URL}}", Path: "/api/v1/users/{{indicator.value}}/sessions"}}, r.Steps)
	require.Equal(t, "1. POST fw.example.com/api/block/{{indicator.value}}\n2. GET {{secrets.OKTA_ORG_URL}}/api/v1/users/{{indicator.value}}/sessions",
		StepsText(r.Steps))
	require.Equal(t, []Step{}, Steps(json.RawMessage(`not json`)))
	require.Equal(t, "evil.example.com", Steps(json.RawMessage(`[{"name":"a","url":"https://user:pw@evil.example.com/x"}]`))[0].Host,
		"userinfo is never shown")
	for _, msg := range []any{SlackMessage(r, "C1", ""), TeamsMessage(r, "")} {
		raw, err := json.Marshal(msg)
		require.NoError(t, err)
		require.Contains(t, string(raw), "workflow version 3")
		require.Contains(t, string(raw), "POST fw.example.com/api/block/{{indicator.value}}")
		require.NotContains(t, string(raw), "key=", "the query (which may carry credentials) is not shown")
	}
}

func TestSlackMessage(t *testing.T) {
	m := SlackMessage(sampleRequest(), "C123", "https://v/decide?token=t")
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	s := string(raw)
	require.Equal(t, "C123", m["channel"])
	require.Contains(t, s, `"action_id":"vigil_approve"`)
	require.Contains(t, s, `"action_id":"vigil_reject"`)
	require.Contains(t, s, `"value":"6f1c1f3e-8d2a-4a53-9a52-0b1f0c3b9e10"`)
	require.Contains(t, s, "Block \\u0026lt;IP\\u0026gt; \\u0026amp; co", "mrkdwn control characters escaped")
	require.Contains(t, s, "0.85")
	require.Contains(t, s, "https://v/decide?token=t")
	require.Contains(t, s, "2026-11-22T11:00:00Z")
}

func TestTeamsMessage(t *testing.T) {
	raw, err := json.Marshal(TeamsMessage(sampleRequest(), "https://v/decide?token=t"))
	require.NoError(t, err)
	s := string(raw)
	require.Contains(t, s, "application/vnd.microsoft.card.adaptive")
	require.Contains(t, s, `"Action.OpenUrl"`)
	require.Contains(t, s, "https://v/decide?token=t\\u0026decision=approve")
	require.Contains(t, s, "https://v/decide?token=t\\u0026decision=reject")
}

func TestNotifierChannels(t *testing.T) {
	type got struct {
		path    string
		headers http.Header
		body    []byte
	}
	received := make(chan got, 10)
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- got{r.URL.Path, r.Header.Clone(), b}
		w.WriteHeader(status)
		if r.URL.Path == "/api/chat.postMessage" {
			_, _ = io.WriteString(w, `{"ok": true}`)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	req := sampleRequest()

	t.Run("slack", func(t *testing.T) {
		n := NewNotifier(Config{Type: NotifierSlack, SlackBotToken: "xoxb-1", SlackChannel: "CDEF", SlackAPIBaseURL: srv.URL + "/api", PublicBaseURL: "https://v"}, srv.Client())
		ch, err := n.Notify(ctx, req, "COVR", "tok")
		require.NoError(t, err)
		require.Equal(t, "COVR", *ch, "the workflow's channel wins")
		require.Equal(t, "COVR", *n.Channel("COVR"))
		require.Equal(t, "CDEF", *n.Channel(""))
		require.Nil(t, NewNotifier(Config{Type: NotifierWebhook}, srv.Client()).Channel("COVR"), "webhooks have no channel")
		g := <-received
		require.Equal(t, "/api/chat.postMessage", g.path)
		require.Equal(t, "Bearer xoxb-1", g.headers.Get("Authorization"))
		require.Contains(t, string(g.body), `"channel":"COVR"`)
		require.Contains(t, string(g.body), "https://v/v1/approvals/"+req.UUID.String()+"/decide?token=tok")
	})
	t.Run("webhook signed", func(t *testing.T) {
		n := NewNotifier(Config{Type: NotifierWebhook, WebhookURL: srv.URL + "/hook", WebhookSecret: "whsec"}, srv.Client())
		_, err := n.Notify(ctx, req, "", "tok")
		require.NoError(t, err)
		g := <-received
		require.Equal(t, webhooks.Sign("whsec", g.headers.Get("X-Vigil-Timestamp"), g.body), g.headers.Get("X-Vigil-Signature"))
		require.True(t, strings.HasPrefix(g.headers.Get("X-Vigil-Signature"), "v1="))
		require.Equal(t, "approval.requested", g.headers.Get("X-Vigil-Event"))
		var p map[string]any
		require.NoError(t, json.Unmarshal(g.body, &p))
		require.Equal(t, "approval.requested", p["event"])
		require.Equal(t, g.headers.Get("X-Vigil-Delivery"), p["id"])
	})
	t.Run("teams", func(t *testing.T) {
		n := NewNotifier(Config{Type: NotifierTeams, TeamsWebhookURL: srv.URL + "/teams", PublicBaseURL: "https://v"}, srv.Client())
		_, err := n.Notify(ctx, req, "", "tok")
		require.NoError(t, err)
		g := <-received
		require.Contains(t, string(g.body), "AdaptiveCard")
	})
	t.Run("none sends nothing", func(t *testing.T) {
		n := NewNotifier(Config{}, srv.Client())
		require.Equal(t, NotifierNone, n.Type())
		_, err := n.Notify(ctx, req, "", "")
		require.NoError(t, err)
		require.Empty(t, received)
	})
	t.Run("errors", func(t *testing.T) {
		var perm *PermanentError
		_, err := NewNotifier(Config{Type: NotifierSlack}, srv.Client()).Notify(ctx, req, "", "")
		require.True(t, errors.As(err, &perm), "unconfigured slack is permanent")
		status = http.StatusBadRequest
		_, err = NewNotifier(Config{Type: NotifierWebhook, WebhookURL: srv.URL, WebhookSecret: "s"}, srv.Client()).Notify(ctx, req, "", "")
		<-received
		require.True(t, errors.As(err, &perm), "4xx is permanent")
		status = http.StatusBadGateway
		_, err = NewNotifier(Config{Type: NotifierTeams, TeamsWebhookURL: srv.URL}, srv.Client()).Notify(ctx, req, "", "")
		<-received
		require.Error(t, err)
		require.False(t, errors.As(err, &perm), "5xx is retried")
		_, err = NewNotifier(Config{Type: "pager"}, srv.Client()).Notify(ctx, req, "", "")
		require.True(t, errors.As(err, &perm))
	})
}
