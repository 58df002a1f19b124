package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/store"
)

// maxDeliveryTimeout bounds the delivery client; each attempt is bounded by its agent's own timeout.
const maxDeliveryTimeout = MaxTimeoutSeconds * time.Second

// NewHTTPClient is the client deliveries go through: every address checked by the SSRF guard at
// dial time, and no redirect followed (a redirect would carry the signature and the auth header to
// a target nobody registered): a 3xx answer is a failed attempt.
func NewHTTPClient(guard *netguard.Guard) *http.Client {
	c := guard.HTTPClient(maxDeliveryTimeout)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Payload is the body of a delivery (API.md §9): {id, event, created_at, data}.
func Payload(delivery uuid.UUID, event string, createdAt time.Time, data any) ([]byte, error) {
	body, err := json.Marshal(map[string]any{"id": delivery.String(), "event": event,
		"created_at": createdAt.UTC().Format(time.RFC3339Nano), "data": data})
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", event, err)
	}
	return body, nil
}

// Delivery is one attempt to hand an event to an agent. ID is the same for every attempt of one
// delivery (X-Vigil-Delivery), so a receiver can de-duplicate.
type Delivery struct {
	ID        uuid.UUID
	Event     string
	AlertUUID *uuid.UUID
	Attempt   int  // 1-based
	Last      bool // no attempt follows this one: a failure gives up
	Body      []byte
}

// Outcome is what one attempt came to.
type Outcome struct {
	Delivered  bool   `json:"delivered"`
	GiveUp     bool   `json:"-"` // stop retrying: 410 Gone, or the last attempt failed
	StatusCode int    `json:"status_code"`
	DurationMS int    `json:"duration_ms"`
	Error      string `json:"error"`
}

// ErrNotDeliverable is wrapped by Deliver's error when the agent cannot be delivered to at all (its
// secret cannot be opened): retrying does not help.
var ErrNotDeliverable = errors.New("agent cannot be delivered to")

// Deliver makes one attempt of d to agent a, bounded by the agent's timeout, and records it. 2xx is
// delivered; 410 gives up; anything else fails this attempt (and gives up when it is the last).
// The returned error is only for a delivery that could not be attempted or recorded.
func (s *Service) Deliver(ctx context.Context, a store.Agent, d Delivery) (Outcome, error) {
	req, err := s.request(ctx, a, d)
	if err != nil {
		return Outcome{}, err
	}
	timeout := time.Duration(a.TimeoutSeconds) * time.Second
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	out := Outcome{}
	resp, err := s.client.Do(req.WithContext(actx))
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		out.StatusCode = resp.StatusCode
	}
	out.DurationMS = int(time.Since(start).Milliseconds())
	switch {
	case err != nil && errors.Is(actx.Err(), context.DeadlineExceeded):
		out.Error = fmt.Sprintf("timed out after %s", timeout)
	case err != nil:
		out.Error = truncate(err.Error(), 1000)
	case out.StatusCode >= 200 && out.StatusCode < 300:
		out.Delivered = true
	case out.StatusCode == http.StatusGone:
		out.Error, out.GiveUp = "agent answered 410 Gone: not retried", true
	default:
		out.Error = fmt.Sprintf("agent answered %d", out.StatusCode)
	}
	if !out.Delivered && d.Last {
		out.GiveUp = true
	}
	return out, s.record(ctx, a, d, out)
}

// request builds the signed POST of d to a.
func (s *Service) request(ctx context.Context, a store.Agent, d Delivery) (*http.Request, error) {
	if s.box == nil {
		return nil, fmt.Errorf("deliver to agent %s: %w: %w", a.UUID, ErrNotDeliverable, errNoBox)
	}
	var secret sealedSecret
	if err := s.box.OpenJSON(a.SigningSecret, &secret); err != nil {
		return nil, fmt.Errorf("deliver to agent %s: open signing secret: %w: %w", a.UUID, ErrNotDeliverable, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.EndpointURL, bytes.NewReader(d.Body))
	if err != nil {
		return nil, fmt.Errorf("deliver to agent %s: %w: %w", a.UUID, ErrNotDeliverable, err)
	}
	webhooks.SetHeaders(req.Header, secret.Secret, d.Event, d.ID.String(), d.Body, s.now())
	req.Header.Set("User-Agent", "Vigil-Webhooks/1")
	if a.AuthHeaderName != nil && len(a.AuthHeaderValue) > 0 {
		var h sealedHeader
		if err := s.box.OpenJSON(a.AuthHeaderValue, &h); err != nil {
			return nil, fmt.Errorf("deliver to agent %s: open auth header: %w: %w", a.UUID, ErrNotDeliverable, err)
		}
		req.Header.Set(*a.AuthHeaderName, h.Value)
	}
	return req, nil
}

func (s *Service) record(ctx context.Context, a store.Agent, d Delivery, out Outcome) error {
	rec := &store.AgentDelivery{DeliveryUUID: d.ID, AgentUUID: a.UUID, Event: d.Event, AlertUUID: d.AlertUUID,
		Attempt: d.Attempt, Status: store.DeliveryFailed, DurationMS: out.DurationMS}
	switch {
	case out.Delivered:
		rec.Status = store.DeliveryDelivered
	case out.GiveUp:
		rec.Status = store.DeliveryGaveUp
	}
	if out.StatusCode != 0 {
		rec.StatusCode = &out.StatusCode
	}
	if out.Error != "" {
		rec.Error = &out.Error
	}
	return s.store.RecordAgentDelivery(ctx, rec)
}

// Test delivers a signed agent.test event to the agent id now: one attempt, recorded like any other.
// A failed delivery is reported in the outcome, not as an error.
func (s *Service) Test(ctx context.Context, id uuid.UUID) (Outcome, error) {
	a, err := s.store.GetAgent(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	d := Delivery{ID: uuid.New(), Event: EventTest, Attempt: 1, Last: true}
	if d.Body, err = Payload(d.ID, EventTest, s.now(), map[string]any{"agent_uuid": a.UUID.String(), "agent_name": a.Name,
		"message": "Test delivery from Vigil: verify the X-Vigil-Signature header with your signing secret."}); err != nil {
		return Outcome{}, err
	}
	return s.Deliver(ctx, a, d)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
