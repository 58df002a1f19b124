package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/store"
)

func slackBody(action string, approval uuid.UUID, user string) string {
	p, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]any{"id": "U" + user, "username": user},
		"team": map[string]any{"id": "T1"}, "response_url": "https://hooks.slack.invalid/x",
		"actions": []any{map[string]any{"action_id": action, "value": approval.String()}}})
	return url.Values{"payload": {string(p)}}.Encode()
}

func (h *runHarness) slack(t *testing.T, body string, ts time.Time, secret string) response {
	t.Helper()
	stamp := strconv.FormatInt(ts.Unix(), 10)
	return h.ts.do(t, http.MethodPost, "/v1/approvals/callback/slack", "", body, "Content-Type", "application/x-www-form-urlencoded",
		approvals.SlackTimestampHeader, stamp, approvals.SlackSignatureHeader, approvals.SlackSignature(secret, stamp, []byte(body)))
}

func TestSlackCallback(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, _, _ := h.keys(t)
	path := "/slack/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	id := *ex.ApprovalRequestUUID
	approve := slackBody(approvals.ActionApprove, id, "alice")
	pending := func() {
		a, err := h.ts.Store.GetApproval(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalPending, a.Status)
		require.Empty(t, a.Decisions)
	}

	t.Run("wrong signature", func(t *testing.T) {
		requireError(t, h.slack(t, approve, time.Now(), "not-the-secret"), http.StatusUnauthorized, "INVALID_SIGNATURE")
		pending()
	})
	t.Run("body changed after signing", func(t *testing.T) {
		stamp := strconv.FormatInt(time.Now().Unix(), 10)
		sig := approvals.SlackSignature(slackTestSecret, stamp, []byte(approve))
		other := slackBody(approvals.ActionApprove, id, "mallory")
		r := h.ts.do(t, http.MethodPost, "/v1/approvals/callback/slack", "", other, "Content-Type", "application/x-www-form-urlencoded",
			approvals.SlackTimestampHeader, stamp, approvals.SlackSignatureHeader, sig)
		requireError(t, r, http.StatusUnauthorized, "INVALID_SIGNATURE")
		pending()
	})
	t.Run("stale timestamp", func(t *testing.T) {
		requireError(t, h.slack(t, approve, time.Now().Add(-6*time.Minute), slackTestSecret), http.StatusUnauthorized, "STALE_REQUEST")
		requireError(t, h.slack(t, approve, time.Now().Add(6*time.Minute), slackTestSecret), http.StatusUnauthorized, "STALE_REQUEST")
		pending()
	})
	t.Run("missing headers", func(t *testing.T) {
		r := h.ts.do(t, http.MethodPost, "/v1/approvals/callback/slack", "", approve, "Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusUnauthorized, r.Status)
		pending()
	})
	t.Run("signed garbage", func(t *testing.T) {
		for _, body := range []string{"payload=%7B", "payload=" + url.QueryEscape(`{"type":"view_submission"}`), "x=1", slackBody("other_action", id, "alice"), "%zz"} {
			requireError(t, h.slack(t, body, time.Now(), slackTestSecret), http.StatusBadRequest, "INVALID_PAYLOAD")
		}
		pending()
	})
	t.Run("unknown approval", func(t *testing.T) {
		r := h.slack(t, slackBody(approvals.ActionApprove, uuid.New(), "alice"), time.Now(), slackTestSecret)
		require.Equal(t, http.StatusOK, r.Status)
		require.Contains(t, r.JSON(t)["text"], "not found")
	})
	t.Run("good signature approves as the Slack user", func(t *testing.T) {
		r := h.slack(t, approve, time.Now(), slackTestSecret)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		require.Contains(t, r.JSON(t)["text"], "approved")
		h.waitRun(t, ex.RunUUID, store.RunSucceeded)
		require.Equal(t, 1, h.steps.Hits(path))
		a, err := h.ts.Store.GetApproval(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalApproved, a.Status)
		require.Equal(t, "slack:alice", a.Decisions[0].ResponderID)
		// A second press is answered, not applied.
		r = h.slack(t, slackBody(approvals.ActionReject, id, "bob"), time.Now(), slackTestSecret)
		require.Equal(t, http.StatusOK, r.Status)
		require.Contains(t, r.JSON(t)["text"], "already been decided")
	})
	t.Run("reject", func(t *testing.T) {
		ex2 := h.execute(t, agent, wf, nil)
		r := h.slack(t, slackBody(approvals.ActionReject, *ex2.ApprovalRequestUUID, "carol"), time.Now(), slackTestSecret)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		h.waitRun(t, ex2.RunUUID, store.RunRejected)
	})
}

func TestSlackCallbackNotConfigured(t *testing.T) {
	ts, _ := newWorkflowServer(t)
	r := ts.do(t, http.MethodPost, "/v1/approvals/callback/slack", "", "payload=x", "Content-Type", "application/x-www-form-urlencoded")
	requireError(t, r, http.StatusNotFound, "NOT_FOUND")
}
