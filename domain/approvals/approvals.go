// Package approvals holds the approval-gate rules of response workflows and the messages sent to
// approvers: the gate decision, single-use decide-page tokens, Slack (Block Kit message, v0 request
// signatures, interaction payloads), Microsoft Teams (Adaptive Card) and the signed generic webhook.
// It holds no database or Temporal code.
package approvals

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Approval modes and trigger sources.
const (
	ModeAlways    = "always"
	ModeAgentOnly = "agent_only"
	ModeNever     = "never"

	TriggerHuman = "human"
	TriggerAgent = "agent"
)

// Modes returns every approval mode of a workflow's gate (API.md §8).
func Modes() []string { return []string{ModeAlways, ModeAgentOnly, ModeNever} }

// TriggerSources returns every trigger source of a run: the kind of key that started it.
func TriggerSources() []string { return []string{TriggerHuman, TriggerAgent} }

// Needed reports whether a run triggered by triggerSource must wait for approval under mode.
// Unknown modes gate (fail closed).
func Needed(mode, triggerSource string) bool {
	switch mode {
	case ModeNever:
		return false
	case ModeAgentOnly:
		return triggerSource != TriggerHuman
	default:
		return true
	}
}

// ExpiresAt is when a request created at now with timeoutSeconds expires.
func ExpiresAt(now time.Time, timeoutSeconds int) time.Time {
	return now.Add(time.Duration(timeoutSeconds) * time.Second).UTC()
}

// TokenBytes is the entropy of a decide-page token.
const TokenBytes = 32

// NewToken returns a fresh decide-page token (URL-safe) and the SHA-256 stored in its place.
func NewToken() (string, []byte, error) {
	buf := make([]byte, TokenBytes)
	if _, err := rand.Read(buf); err != nil {
		return "", nil, fmt.Errorf("read random bytes: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(buf)
	return tok, HashToken(tok), nil
}

// HashToken is the stored form of a token.
func HashToken(tok string) []byte {
	sum := sha256.Sum256([]byte(tok))
	return sum[:]
}

// WellFormedToken reports whether tok has the shape NewToken produces, so garbage never reaches
// the database.
func WellFormedToken(tok string) bool {
	if len(tok) != base64.RawURLEncoding.EncodedLen(TokenBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(tok)
	return err == nil
}

// DecideURL is the browser decide page of approval id.
func DecideURL(publicBaseURL string, id uuid.UUID, token string) string {
	return strings.TrimRight(publicBaseURL, "/") + "/v1/approvals/" + id.String() + "/decide?token=" + url.QueryEscape(token)
}

// Request is what approvers are shown about a pending request.
type Request struct {
	UUID              uuid.UUID `json:"approval_request_uuid"`
	RunUUID           uuid.UUID `json:"run_uuid"`
	WorkflowUUID      uuid.UUID `json:"workflow_uuid"`
	WorkflowName      string    `json:"workflow_name"`
	RiskLevel         string    `json:"risk_level"`
	IndicatorType     string    `json:"indicator_type"`
	IndicatorValue    string    `json:"indicator_value"`
	TriggerSource     string    `json:"trigger_source"`
	TriggerKeyPrefix  string    `json:"trigger_key_prefix,omitempty"`
	Reason            string    `json:"reason,omitempty"`
	Confidence        *float64  `json:"confidence"`
	RequiredApprovals int       `json:"required_approvals"`
	ExpiresAt         time.Time `json:"expires_at"`
	// WorkflowVersion and Steps are what will run if approved (Steps: method, host, path as defined).
	WorkflowVersion int    `json:"workflow_version"`
	Steps           []Step `json:"steps"`
}

// ConfidenceText renders the confidence for people ("0.85", or "n/a").
func (r Request) ConfidenceText() string {
	if r.Confidence == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*r.Confidence, 'f', -1, 64)
}

// Summary is a one-line description of the request.
func (r Request) Summary() string {
	return fmt.Sprintf("%s (%s risk) on %s %s, requested by %s", r.WorkflowName, r.RiskLevel, r.IndicatorType, r.IndicatorValue, r.TriggerSource)
}
