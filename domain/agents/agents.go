// Package agents owns the rules of AI agents registered with a webhook (API.md §9): what a valid
// registration is, which events and alerts an agent receives, its signing secret, and how one
// delivery attempt is made and judged. REST handlers, the Temporal delivery activity and the test
// route call it; none of them decides any of this themselves.
package agents

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Events an agent can subscribe to (named in store, where the changes raising them commit), and the
// test event POST /v1/agents/{uuid}/test sends.
const (
	EventAlertEnriched     = store.EventAlertEnriched
	EventAlertUpdated      = store.EventAlertUpdated
	EventFindingAdded      = store.EventAlertFindingAdded
	EventCommentAdded      = store.EventAlertCommentAdded
	EventRunCompleted      = store.EventWorkflowRunComplete
	EventApprovalRequested = store.EventApprovalRequested
	EventApprovalDecided   = store.EventApprovalDecided
	EventCaseCreated       = store.EventCaseCreatedAgent
	EventCaseUpdated       = store.EventCaseUpdatedAgent
	EventCaseAlertAdded    = store.EventCaseAlertAddedAgent
	EventTest              = "agent.test"
)

// Events lists the events an agent can subscribe to, in the order API.md and the OpenAPI document
// list them.
func Events() []string {
	return []string{EventAlertEnriched, EventAlertUpdated, EventFindingAdded, EventCommentAdded, EventRunCompleted,
		EventApprovalRequested, EventApprovalDecided, EventCaseCreated, EventCaseUpdated, EventCaseAlertAdded}
}

// Registration bounds and defaults (API.md §9).
const (
	DefaultTimeoutSeconds = 30
	MaxTimeoutSeconds     = 300
	DefaultRetryCount     = 3
	MaxRetryCount         = 10
)

// Store is what the agent rules read and write.
type Store interface {
	CreateAgent(ctx context.Context, a *store.Agent) error
	GetAgent(ctx context.Context, id uuid.UUID) (store.Agent, error)
	UpdateAgent(ctx context.Context, a *store.Agent, columns ...string) error
	DeleteAgent(ctx context.Context, id uuid.UUID) error
	RecordAgentDelivery(ctx context.Context, d *store.AgentDelivery) error
	RecordActivity(ctx context.Context, db bun.IDB, e *store.ActivityEvent) error
	AlertSubject(ctx context.Context, alertUUID uuid.UUID) (targeting.Subject, error)
	SubscribedAgents(ctx context.Context, event string) ([]store.Agent, error)
	RaiseAgentEvent(ctx context.Context, e *store.AgentEvent) (bool, error)
	GetAPIKey(ctx context.Context, id uuid.UUID) (store.APIKey, error) // the registering key, at delivery (FollowsKey)
	audit.Store                                                        // a registration's change and its audit event commit together
}

// Sealer seals the signing secret and the auth header value at rest (secretbox.Box).
type Sealer interface {
	SealJSON(v any) ([]byte, error)
	OpenJSON(sealed []byte, v any) error
}

// URLChecker refuses endpoint URLs the SSRF guard would refuse (netguard.Guard); the delivery
// client checks the resolved address again at dial time.
type URLChecker interface {
	CheckURL(raw string) error
}

// Doer sends one delivery request (the SSRF-guarded client of NewHTTPClient).
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Actor is who changes a registration, for the activity trail, and the key's scopes, which bound
// what an agent it registers receives (nil: Vigil itself, no key).
type Actor struct {
	Type      string // store.ActorAPI, store.ActorMCP, …
	KeyPrefix string
	KeyUUID   uuid.UUID // the key the agent then follows (uuid.Nil: none)
	Scopes    []string
	// For the audit trail: the key's name, the request's id and the client address.
	KeyName, RequestID, ClientIP string
	ClientRequestID              string // the client's X-Request-ID, recorded beside RequestID
}

// auditor is the actor as the audit trail records it.
func (a Actor) auditor() store.Actor {
	t := a.Type
	if t == "" {
		t = store.ActorAPI
	}
	return store.Actor{Type: t, KeyPrefix: a.KeyPrefix, KeyName: a.KeyName, RequestID: a.RequestID, ClientRequestID: a.ClientRequestID, ClientIP: a.ClientIP}
}

// registeredScopes is what an agent registered by actor may receive: a copy of the key's scopes (nil
// without a key).
func (a Actor) registeredScopes() []string {
	if a.Scopes == nil {
		return nil
	}
	return append([]string{}, a.Scopes...)
}

// registeredKey is the key an agent registered by actor follows (nil without a key).
func (a Actor) registeredKey() *uuid.UUID {
	if a.KeyUUID == uuid.Nil {
		return nil
	}
	id := a.KeyUUID
	return &id
}

// Service applies the agent rules.
type Service struct {
	store  Store
	box    Sealer
	guard  URLChecker
	client Doer
	now    func() time.Time
}

// New returns the agent service. box is nil when no ENCRYPTION_KEY is configured: registering an
// agent then fails, because its signing secret could not be kept.
func New(st Store, box Sealer, guard URLChecker, client Doer) *Service {
	return &Service{store: st, box: box, guard: guard, client: client, now: time.Now}
}

// Spec is a registration, or the changes to one: on Create a nil field takes its default, on Update
// a nil field is left unchanged (API.md §9: null = unchanged). Bounds the binder enforces (lengths,
// timeout and retry ranges) are checked again here so every caller gets them.
type Spec struct {
	Name                *string
	Description         *string
	EndpointURL         *string
	AuthHeaderName      *string // with AuthHeaderValue: both or neither; both "" removes the header
	AuthHeaderValue     *string
	Events              []string
	TriggerOnSources    []string
	TriggerOnSeverities []string
	TriggerFilter       json.RawMessage // nil: unchanged; rules with no entries ({}): no filter
	TimeoutSeconds      *int
	RetryCount          *int
	IsActive            *bool
	Documentation       *string
}

type sealedSecret struct {
	Secret string `json:"secret"`
}

type sealedHeader struct {
	Value string `json:"value"`
}

var headerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,99}$`)

// reservedHeaders are set by the delivery itself; an auth header may not replace them.
var reservedHeaders = []string{"content-type", "content-length", "host", "transfer-encoding", "connection",
	"x-vigil-event", "x-vigil-delivery", "x-vigil-timestamp", "x-vigil-signature"}

// check validates the fields spec sets; locations are relative to the request body.
func (s *Service) check(spec Spec, creating bool) validate.Errors {
	var errs validate.Errors
	str := func(p *string, field string, min, max int) {
		if p == nil {
			if creating && min > 0 {
				errs.Add([]any{field}, validate.TypeMissing, "Field required.", nil)
			}
			return
		}
		if n := len([]rune(*p)); n < min || n > max {
			errs.AddCtx([]any{field}, validate.TypeValue, fmt.Sprintf("Must be %d to %d characters.", min, max), *p,
				map[string]any{"min_length": min, "max_length": max})
		}
	}
	str(spec.Name, "name", 1, 200)
	str(spec.Description, "description", 0, 10000)
	str(spec.Documentation, "documentation", 0, 100000)
	str(spec.EndpointURL, "endpoint_url", 1, 2048)
	if spec.EndpointURL != nil && len(*spec.EndpointURL) <= 2048 {
		if msg := s.endpointProblem(*spec.EndpointURL); msg != "" {
			errs.Add([]any{"endpoint_url"}, validate.TypeValue, msg, *spec.EndpointURL)
		}
	}
	checkAuthHeader(&errs, spec.AuthHeaderName, spec.AuthHeaderValue)
	if spec.Events != nil {
		if len(spec.Events) == 0 {
			errs.Add([]any{"events"}, validate.TypeTooShort, "Subscribe to at least one event.", spec.Events)
		}
		errs.Merge([]any{"events"}, enumList(spec.Events, Events()))
	}
	if len(spec.TriggerOnSources) > 100 {
		errs.Add([]any{"trigger_on_sources"}, validate.TypeTooLong, "At most 100 sources.", len(spec.TriggerOnSources))
	}
	for i, src := range spec.TriggerOnSources {
		if n := len(src); n < 1 || n > 100 {
			errs.Add([]any{"trigger_on_sources", i}, validate.TypeValue, "A source name is 1 to 100 characters.", src)
		}
	}
	errs.Merge([]any{"trigger_on_severities"}, enumList(spec.TriggerOnSeverities, severity.Names()))
	if spec.TriggerFilter != nil {
		_, ferrs := targeting.Parse(spec.TriggerFilter)
		errs.Merge([]any{"trigger_filter"}, ferrs)
	}
	if spec.TimeoutSeconds != nil && (*spec.TimeoutSeconds < 1 || *spec.TimeoutSeconds > MaxTimeoutSeconds) {
		errs.AddCtx([]any{"timeout_seconds"}, validate.TypeValue, fmt.Sprintf("Must be 1 to %d.", MaxTimeoutSeconds),
			*spec.TimeoutSeconds, map[string]any{"ge": 1, "le": MaxTimeoutSeconds})
	}
	if spec.RetryCount != nil && (*spec.RetryCount < 0 || *spec.RetryCount > MaxRetryCount) {
		errs.AddCtx([]any{"retry_count"}, validate.TypeValue, fmt.Sprintf("Must be 0 to %d.", MaxRetryCount),
			*spec.RetryCount, map[string]any{"ge": 0, "le": MaxRetryCount})
	}
	return errs
}

// endpointProblem says why raw cannot be an agent's endpoint ("" when it can).
func (s *Service) endpointProblem(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "Must be an absolute http or https URL."
	}
	if u.User != nil {
		return "Must not carry credentials; use auth_header_name and auth_header_value."
	}
	if err := s.guard.CheckURL(raw); err != nil {
		return "Refused by the SSRF guard: " + err.Error()
	}
	return ""
}

func checkAuthHeader(errs *validate.Errors, name, value *string) {
	if (name == nil) != (value == nil) || (name != nil && (*name == "") != (*value == "")) {
		errs.Add([]any{"auth_header_value"}, validate.TypeValue,
			"auth_header_name and auth_header_value go together: set both, or neither.", nil)
		return
	}
	if name == nil || *name == "" {
		return
	}
	if !headerNameRE.MatchString(*name) {
		errs.Add([]any{"auth_header_name"}, validate.TypePattern, "A header name is letters, digits and '-', at most 100.", *name)
	} else if slices.Contains(reservedHeaders, strings.ToLower(*name)) {
		errs.Add([]any{"auth_header_name"}, validate.TypeValue, "This header is set by the delivery itself.", *name)
	}
	if n := len(*value); n > 4096 || strings.ContainsAny(*value, "\r\n\x00") {
		errs.Add([]any{"auth_header_value"}, validate.TypeValue, "At most 4096 characters, no line breaks.", nil)
	}
}

// enumList checks every element of list is one of allowed, and none repeats.
func enumList(list, allowed []string) validate.Errors {
	var errs validate.Errors
	for i, v := range list {
		switch {
		case !slices.Contains(allowed, v):
			errs.AddCtx([]any{i}, validate.TypeEnum, "Unknown value.", v, map[string]any{"allowed": allowed})
		case slices.Index(list, v) != i:
			errs.Add([]any{i}, validate.TypeValue, "Listed twice.", v)
		}
	}
	return errs
}

// Create registers an agent and returns it with its signing secret, which is shown once. An agent
// subscribed to an event whose subject the registering key cannot read is refused
// (CannotReceiveError, CheckSubscriptions); so is a PATCH (Update) setting such events.
func (s *Service) Create(ctx context.Context, actor Actor, spec Spec) (store.Agent, string, error) {
	if errs := s.check(spec, true); len(errs) > 0 {
		return store.Agent{}, "", errs
	}
	a := store.Agent{Name: *spec.Name, EndpointURL: *spec.EndpointURL, Events: []string{EventAlertEnriched},
		TriggerOnSources: []string{}, TriggerOnSeverities: []string{}, TimeoutSeconds: DefaultTimeoutSeconds,
		RetryCount: DefaultRetryCount, IsActive: true}
	if actor.KeyPrefix != "" {
		a.CreatedBy = &actor.KeyPrefix
	}
	a.RegisteredScopes, a.RegisteredKeyUUID = actor.registeredScopes(), actor.registeredKey()
	if _, err := s.apply(&a, spec); err != nil {
		return store.Agent{}, "", err
	}
	if err := CheckSubscriptions(a); err != nil {
		return store.Agent{}, "", err
	}
	secret, err := s.newSecret(&a)
	if err != nil {
		return store.Agent{}, "", err
	}
	err = s.write(ctx, actor, store.AuditCreated, "agent_created", nil, &a, func(ctx context.Context, tx *store.Store) error {
		return tx.CreateAgent(ctx, &a)
	})
	if err != nil {
		return store.Agent{}, "", err
	}
	return a, secret, nil
}

// Update applies spec's set fields to the agent id. When endpoint_url moves to another origin
// (scheme, host, port), the credentials that belonged to the old endpoint do not follow it (issue 27):
// the sealed auth header is dropped unless the same request sets one, the signing secret is rotated,
// and the agent now receives what the moving key can read (its scopes are recorded); the new secret
// is returned (shown once), "" when it was not rotated.
func (s *Service) Update(ctx context.Context, actor Actor, id uuid.UUID, spec Spec) (store.Agent, string, error) {
	if errs := s.check(spec, false); len(errs) > 0 {
		return store.Agent{}, "", errs
	}
	a, err := s.store.GetAgent(ctx, id)
	if err != nil {
		return store.Agent{}, "", err
	}
	moved := spec.EndpointURL != nil && endpointOrigin(*spec.EndpointURL) != endpointOrigin(a.EndpointURL)
	before := a
	cols, err := s.apply(&a, spec)
	if err != nil || len(cols) == 0 {
		return a, "", err
	}
	secret := ""
	if moved {
		if spec.AuthHeaderName == nil && a.AuthHeaderName != nil {
			a.AuthHeaderName, a.AuthHeaderValue = nil, nil
			cols = append(cols, "auth_header_name", "auth_header_value")
		}
		if secret, err = s.newSecret(&a); err != nil {
			return store.Agent{}, "", err
		}
		// The key that decides where deliveries go is the one whose reading rights they carry.
		a.RegisteredScopes, a.RegisteredKeyUUID = actor.registeredScopes(), actor.registeredKey()
		cols = append(cols, "signing_secret", "registered_scopes", "registered_key_uuid")
	}
	if spec.Events != nil { // a new subscription is a registration's: its subjects must be readable
		if err := CheckSubscriptions(a); err != nil {
			return store.Agent{}, "", err
		}
	}
	err = s.write(ctx, actor, store.AuditUpdated, "agent_updated", &before, &a, func(ctx context.Context, tx *store.Store) error {
		return tx.UpdateAgent(ctx, &a, cols...)
	})
	if err != nil {
		return store.Agent{}, "", err
	}
	return a, secret, nil
}

// endpointOrigin is scheme://host:port of an endpoint URL, the default port made explicit.
func endpointOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// Delete removes the agent id and its delivery records.
func (s *Service) Delete(ctx context.Context, actor Actor, id uuid.UUID) error {
	a, err := s.store.GetAgent(ctx, id)
	if err != nil {
		return err
	}
	return s.write(ctx, actor, store.AuditDeleted, "agent_deleted", &a, nil, func(ctx context.Context, tx *store.Store) error {
		return tx.DeleteAgent(ctx, id)
	})
}

// RotateSecret gives the agent id a new signing secret, shown once; the old one stops verifying at
// once (every later delivery, retries included, is signed with the new one).
func (s *Service) RotateSecret(ctx context.Context, actor Actor, id uuid.UUID) (store.Agent, string, error) {
	a, err := s.store.GetAgent(ctx, id)
	if err != nil {
		return store.Agent{}, "", err
	}
	before := a
	secret, err := s.newSecret(&a)
	if err != nil {
		return store.Agent{}, "", err
	}
	err = s.write(ctx, actor, store.AuditRotated, "agent_secret_rotated", &before, &a, func(ctx context.Context, tx *store.Store) error {
		return tx.UpdateAgent(ctx, &a, "signing_secret")
	})
	if err != nil {
		return store.Agent{}, "", err
	}
	return a, secret, nil
}

// apply copies spec's set fields onto a and returns the columns it changed.
func (s *Service) apply(a *store.Agent, spec Spec) ([]string, error) {
	var cols []string
	set := func(col string) { cols = append(cols, col) }
	if spec.Name != nil {
		a.Name = *spec.Name
		set("name")
	}
	if spec.Description != nil {
		a.Description = spec.Description
		set("description")
	}
	if spec.EndpointURL != nil {
		a.EndpointURL = *spec.EndpointURL
		set("endpoint_url")
	}
	if spec.AuthHeaderName != nil {
		a.AuthHeaderName, a.AuthHeaderValue = nil, nil
		if *spec.AuthHeaderName != "" {
			if s.box == nil {
				return nil, errNoBox
			}
			sealed, err := s.box.SealJSON(sealedHeader{Value: *spec.AuthHeaderValue})
			if err != nil {
				return nil, fmt.Errorf("seal auth header: %w", err)
			}
			a.AuthHeaderName, a.AuthHeaderValue = spec.AuthHeaderName, sealed
		}
		set("auth_header_name")
		set("auth_header_value")
	}
	if spec.Events != nil {
		a.Events = spec.Events
		set("events")
	}
	if spec.TriggerOnSources != nil {
		a.TriggerOnSources = spec.TriggerOnSources
		set("trigger_on_sources")
	}
	if spec.TriggerOnSeverities != nil {
		a.TriggerOnSeverities = spec.TriggerOnSeverities
		set("trigger_on_severities")
	}
	if spec.TriggerFilter != nil {
		a.TriggerFilter = nil
		if rules, _ := targeting.Parse(spec.TriggerFilter); !rules.Empty() {
			a.TriggerFilter = spec.TriggerFilter
		}
		set("trigger_filter")
	}
	if spec.TimeoutSeconds != nil {
		a.TimeoutSeconds = *spec.TimeoutSeconds
		set("timeout_seconds")
	}
	if spec.RetryCount != nil {
		a.RetryCount = *spec.RetryCount
		set("retry_count")
	}
	if spec.IsActive != nil {
		a.IsActive = *spec.IsActive
		set("is_active")
	}
	if spec.Documentation != nil {
		a.Documentation = spec.Documentation
		set("documentation")
	}
	return cols, nil
}

var errNoBox = errors.New("agents: no ENCRYPTION_KEY configured to seal agent secrets")

// newSecret makes a fresh signing secret for a and seals it into a.SigningSecret.
func (s *Service) newSecret(a *store.Agent) (string, error) {
	if s.box == nil {
		return "", errNoBox
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signing secret: %w", err)
	}
	secret := "whsec_" + base64.RawURLEncoding.EncodeToString(b)
	sealed, err := s.box.SealJSON(sealedSecret{Secret: secret})
	if err != nil {
		return "", fmt.Errorf("seal signing secret: %w", err)
	}
	a.SigningSecret = sealed
	return secret, nil
}

// write applies a change to a registration and records it in the same transaction: the activity
// event (event) and the audit event (action), before and after the change (nil: none).
func (s *Service) write(ctx context.Context, actor Actor, action, event string, before, after *store.Agent,
	apply func(ctx context.Context, tx *store.Store) error) error {
	return audit.Record(ctx, s.store, actor.auditor(), action, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		if err := apply(ctx, tx); err != nil {
			return audit.Subject{}, err
		}
		a := after
		if a == nil {
			a = before
		}
		if err := tx.RecordActivity(ctx, nil, activity(actor, event, *a)); err != nil {
			return audit.Subject{}, err
		}
		subj := audit.Subject{Type: audit.Agent, UUID: a.UUID, Name: a.Name}
		if before != nil {
			subj.Before = before
		}
		if after != nil {
			subj.After = after
		}
		return subj, nil
	})
}

func activity(actor Actor, event string, a store.Agent) *store.ActivityEvent {
	e := &store.ActivityEvent{EventType: event, ActorType: actor.Type,
		References: map[string]any{"agent_uuid": a.UUID.String(), "agent_name": a.Name, "endpoint_host": endpointHost(a.EndpointURL)}}
	if e.ActorType == "" {
		e.ActorType = store.ActorAPI
	}
	if actor.KeyPrefix != "" {
		e.ActorKeyPrefix = &actor.KeyPrefix
	}
	return e
}

func endpointHost(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// Matches reports whether agent a receives event for an alert described by subject: active,
// subscribed, its sources and severities empty or holding the alert's, its trigger_filter matching.
// A stored filter that no longer parses matches nothing (fail closed).
func Matches(a store.Agent, event string, subject targeting.Subject) bool {
	if !a.IsActive || !slices.Contains(a.Events, event) {
		return false
	}
	if len(a.TriggerOnSources) > 0 && !slices.Contains(a.TriggerOnSources, subject.SourceName) {
		return false
	}
	if len(a.TriggerOnSeverities) > 0 && !slices.Contains(a.TriggerOnSeverities, subject.Severity) {
		return false
	}
	if len(a.TriggerFilter) == 0 || string(a.TriggerFilter) == "null" {
		return true
	}
	rules, errs := targeting.Parse(a.TriggerFilter)
	return len(errs) == 0 && rules.Matches(subject)
}
