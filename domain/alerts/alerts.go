// Package alerts owns the rules of working an alert after ingest (API.md §3): the status transition
// graph and every decision of an alert PATCH (close classification, reopen, timestamps, tags, malice
// override), agent findings, the alert's effective malice, adding indicators to an alert and an
// analyst's indicator malice override.
//
// Service is the one entry point for these rules. Every front door (the REST handlers in api/, the MCP
// server, workflows) calls it with a store.Actor, so each writes the same activity events. Inputs are
// validated here in full (enums, bounds, NUL characters), whatever a front door checked before;
// validation errors are validate.Errors with locations relative to the input (the REST adapter
// prefixes "body").
package alerts

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/store"
)

// Store is what the service needs from persistence (implemented by *store.Store).
type Store interface {
	PatchAlert(ctx context.Context, id uuid.UUID, decide func(a *store.Alert, now time.Time) (store.AlertChange, error)) (store.Alert, error)
	AlertExists(ctx context.Context, id uuid.UUID) error
	CreateFinding(ctx context.Context, f *store.Finding, actorType string) error
	ListFindings(ctx context.Context, alertID uuid.UUID) ([]store.Finding, error)
	LinkIndicators(ctx context.Context, alertID uuid.UUID, keys []store.IndicatorKey, source string) ([]store.Indicator, int, error)
	SetIndicatorMalice(ctx context.Context, id uuid.UUID, level *string, recompute func(map[string]any) string, actorType, actorKeyPrefix string) (store.Indicator, error)
	IndicatorAlertSources(ctx context.Context, id uuid.UUID) ([]string, error)
	// LinkIndicatorsForEnrichment links as LinkIndicators and, in the same transaction, queues one
	// enrichment start per indicator (start outbox) and records alert_enrichment_requested.
	LinkIndicatorsForEnrichment(ctx context.Context, alertID uuid.UUID, keys []store.IndicatorKey, source, actorType, actorKeyPrefix string) ([]store.Indicator, int, error)
}

// Service applies the alert rules against a Store.
type Service struct {
	store Store
	log   *slog.Logger
}

// New returns a Service over st.
func New(st Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: st, log: log}
}
