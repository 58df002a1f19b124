// Package responses owns the rules of response workflows, whatever the front door (REST, the MCP
// server, agent events, the console): executing a workflow (trigger source, agent reason and
// confidence, the active and indicator-type checks, the gate decision, the approval request,
// idempotency, the start through the outbox), dry runs (through the one httpsteps runner), the
// secrets a workflow names, saving workflow definitions (steps, required secrets, secret hosts,
// versions, system workflows), and deciding approval requests (who may decide, quorum, self-approval,
// expiry, duplicate decisions), and running a workflow run's steps (Runner, runner.go: the WorkflowRun
// activities are its adapters). Front doors parse, call one function here with an Actor or a
// Decider, and map the result. Where a rule needs a row lock the store locks and this package
// decides: store.DecideApproval locks the request and calls back decide.go's rules in the same
// transaction; store.CreateWorkflowRun commits what Execute decided. Only this package calls them.
package responses

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/store"
)

// Store is what the rules read and write.
type Store interface {
	GetWorkflow(ctx context.Context, id uuid.UUID) (store.Workflow, error)
	CreateWorkflow(ctx context.Context, w *store.Workflow) error
	UpdateWorkflow(ctx context.Context, w *store.Workflow, newVersion bool, columns ...string) error
	DeleteWorkflow(ctx context.Context, id uuid.UUID) error
	audit.Store // a configuration change and its audit event commit together
	SetSystemWorkflowEnabled(ctx context.Context, id uuid.UUID, enabled bool) (store.Workflow, error)
	CreateWorkflowRun(ctx context.Context, run *store.WorkflowRun, approval *store.ApprovalRequest) (bool, error)
	CancelWorkflowRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error)
	FindIdempotentRun(ctx context.Context, keyUUID, workflowUUID uuid.UUID, idemKey string) (store.WorkflowRun, error)
	GetApproval(ctx context.Context, id uuid.UUID) (store.ApprovalRequest, error)
	DecideApproval(ctx context.Context, id uuid.UUID, decide store.DecideFunc) (store.ApprovalRequest, error)
	SealedWorkflowSecrets(ctx context.Context, names []string) (map[string][]byte, error)
	WorkflowSecretHosts(ctx context.Context, names []string) (map[string][]string, error)
	AlertTemplateValues(ctx context.Context, id uuid.UUID) (map[string]any, error)
	RecordActivity(ctx context.Context, db bun.IDB, e *store.ActivityEvent) error
	// What launchers and approval inboxes read (launcher.go, inbox.go).
	WorkflowsForIndicatorTypes(ctx context.Context, types []string) ([]store.Workflow, error)
	ListPendingApprovals(ctx context.Context, now time.Time, limit int) ([]store.ApprovalRequest, error)
	RunContexts(ctx context.Context, runs []uuid.UUID) (map[uuid.UUID]store.RunContext, error)
}

// SecretOpener opens sealed secrets (secretbox.Box).
type SecretOpener interface {
	Open(sealed []byte) ([]byte, error)
}

// RunSignaler tells a run's Temporal workflow to re-read its approval decision (temporal.RunSignaler).
type RunSignaler interface {
	SignalWorkflowRun(ctx context.Context, runID uuid.UUID) error
}

// Deps are the service's dependencies. Secrets, StepClient and Signaler may be nil: the operations
// needing them then answer ErrUnavailable (Signaler: the signal is skipped; the run's durable timer
// and re-read make a lost signal harmless).
type Deps struct {
	Store      Store
	Secrets    SecretOpener
	StepClient httpsteps.Doer // live dry runs: the SSRF-guarded client of workflow steps
	Signaler   RunSignaler
	Log        *slog.Logger
}

// Service applies the rules of response workflows.
type Service struct {
	deps Deps
	log  *slog.Logger
}

// New returns a Service over deps.
func New(deps Deps) *Service {
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{deps: deps, log: log}
}

// Actor types: who is calling, as recorded on activity events.
const (
	ActorAPI      = store.ActorAPI
	ActorMCP      = store.ActorMCP
	ActorWorkflow = store.ActorWorkflow
	ActorSystem   = store.ActorSystem
)

// Actor is the API key calling, and through which front door.
type Actor struct {
	KeyUUID   uuid.UUID
	KeyPrefix string
	KeyName   string
	KeyType   string   // auth.KeyTypeHuman or auth.KeyTypeAgent
	Scopes    []string // the key's scopes (admin holds every scope)
	Type      string   // ActorAPI, ActorMCP, ActorWorkflow or ActorSystem; "" is ActorAPI
	// For the audit trail: the request's id and the client address ("" when the door has none).
	RequestID, ClientIP string
	ClientRequestID     string // the client's X-Request-ID, recorded beside RequestID
}

// auditor is the actor as the audit trail records it.
func (a Actor) auditor() store.Actor {
	t := a.Type
	if t == "" {
		t = ActorAPI
	}
	return store.Actor{Type: t, KeyPrefix: a.KeyPrefix, KeyName: a.KeyName, RequestID: a.RequestID, ClientRequestID: a.ClientRequestID, ClientIP: a.ClientIP}
}

// ActorOf is the actor of a key authenticated by a front door of type actorType.
func ActorOf(p auth.Principal, actorType string) Actor {
	return Actor{KeyUUID: p.KeyUUID, KeyPrefix: p.KeyPrefix, KeyName: p.Name, KeyType: p.KeyType, Scopes: p.Scopes, Type: actorType}
}

// TriggerSource is the run's trigger source: the key's type, never anything the caller says.
func (a Actor) TriggerSource() string {
	if a.KeyType == auth.KeyTypeAgent {
		return auth.KeyTypeAgent
	}
	return auth.KeyTypeHuman
}

func (a Actor) isAdmin() bool { return auth.Principal{Scopes: a.Scopes}.Has(auth.ScopeAdmin) }

func (a Actor) actorType() string {
	if a.Type == "" {
		return ActorAPI
	}
	return a.Type
}

// Errors of the service; front doors map them to their codes (API.md §8).
var (
	// ErrAgentCannotApprove: agent keys cannot decide approval requests (403 AGENT_CANNOT_APPROVE).
	ErrAgentCannotApprove = errors.New("agent keys cannot decide approval requests")
	// ErrUnavailable: a dependency this operation needs is not configured or not reachable (503).
	ErrUnavailable = errors.New("unavailable")
)

// NotFoundError says which referenced record does not exist (404).
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

func notFoundAs(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return &NotFoundError{What: what}
	}
	return err
}

// NotActiveError: the workflow is not active (409 WORKFLOW_NOT_ACTIVE).
type NotActiveError struct{ State string }

func (e *NotActiveError) Error() string { return "workflow is " + e.State + ", not active" }

// ForbiddenError: the actor lacks Scopes for this use (403 FORBIDDEN with required_scopes).
type ForbiddenError struct {
	Scopes []string
	Reason string
}

func (e *ForbiddenError) Error() string { return e.Reason }

// UnavailableError says what is missing; it matches ErrUnavailable.
type UnavailableError struct{ Message string }

func (e *UnavailableError) Error() string        { return e.Message }
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func unavailable(msg string) error { return &UnavailableError{Message: msg} }
