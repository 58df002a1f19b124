package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

// HealerStore is what the CircuitHealer needs from the store.
type HealerStore interface {
	ParkedProviders(ctx context.Context, maxReruns int) ([]string, error)
	Circuits(ctx context.Context) ([]store.Circuit, error)
	EnqueueParkedReruns(ctx context.Context, provider string, limit, maxReruns int) (int, error)
	GetProviderByName(ctx context.Context, name string) (store.EnrichmentProvider, error)
	ParkedTargets(ctx context.Context, provider string, types []string, limit int) ([]store.IndicatorKey, error)
}

// CircuitHealerOptions tune a CircuitHealer; zero values take the defaults.
type CircuitHealerOptions struct {
	Interval  time.Duration // between rounds (default 2 s)
	Batch     int           // alerts re-queued per provider and round (default 500)
	MaxReruns int           // failed re-runs after which an alert stays parked (default 3)
}

// CircuitHealer heals provider outages (docs/ENRICHMENT.md "Provider outages"). Every round, for
// each provider with parked alerts (their enrichment by it failed, or its open circuit refused
// it): while the circuit is closed, it queues their pipeline re-runs through the outbox; while it is
// open and its cool-down is over, it starts the half-open probe, a ProviderCall workflow on a value of
// a parked alert, so a provider that comes back is noticed even when no new alert arrives. The state
// is in Postgres, so any worker's healer continues where another stopped and several run together.
type CircuitHealer struct {
	st     HealerStore
	c      client.Client
	queues Queues
	log    *slog.Logger
	opts   CircuitHealerOptions
}

// NewCircuitHealer returns a CircuitHealer.
func NewCircuitHealer(st HealerStore, c client.Client, queues Queues, log *slog.Logger, opts CircuitHealerOptions) *CircuitHealer {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	if opts.MaxReruns <= 0 {
		opts.MaxReruns = 3
	}
	return &CircuitHealer{st: st, c: c, queues: queues, log: log, opts: opts}
}

// Run runs rounds until ctx ends; a failed round is logged and the next one tries again.
func (h *CircuitHealer) Run(ctx context.Context) error {
	t := time.NewTicker(h.opts.Interval)
	defer t.Stop()
	for {
		if err := h.Round(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("circuit healer round", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Round runs one round and returns what failed in it.
func (h *CircuitHealer) Round(ctx context.Context) error {
	providers, err := h.st.ParkedProviders(ctx, h.opts.MaxReruns)
	if err != nil || len(providers) == 0 {
		return err
	}
	circuits, err := h.st.Circuits(ctx)
	if err != nil {
		return err
	}
	byName := make(map[string]store.Circuit, len(circuits))
	for _, c := range circuits {
		byName[c.ProviderName] = c
	}
	var errs []error
	for _, p := range providers {
		c := byName[p]
		switch {
		case !c.Open():
			n, err := h.st.EnqueueParkedReruns(ctx, p, h.opts.Batch, h.opts.MaxReruns)
			if err != nil {
				errs = append(errs, err)
			} else if n > 0 {
				h.log.Info("re-enriching alerts after a provider failure", "provider", p, "alerts", n)
			}
		case c.Due:
			if err := h.probe(ctx, p, *c.RetryAt); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// probe starts the half-open probe of provider: a ProviderCall on the first routable value of its
// parked alerts that it supports, without the cache. Its step claims the probe (store.CircuitAdmit)
// and closes or re-opens the circuit; the next round acts on the outcome.
func (h *CircuitHealer) probe(ctx context.Context, provider string, retryAt time.Time) error {
	p, err := h.st.GetProviderByName(ctx, provider)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted: its parked rows went with it
	}
	if err != nil {
		return err
	}
	targets, err := h.st.ParkedTargets(ctx, provider, p.SupportedIndicatorTypes, 20)
	if err != nil {
		return err
	}
	for _, t := range targets {
		if _, skip := netguard.NonRoutable(t.Type, t.Value); skip {
			continue
		}
		id := ids.CircuitProbe(provider, retryAt.UnixMilli())
		_, err := h.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                       id,
			TaskQueue:                h.queues.Enrichment,
			WorkflowExecutionTimeout: 10 * time.Minute,
			WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		}, workflows.ProviderCall, workflows.ProviderCallInput{Provider: provider, Type: t.Type, Value: t.Value, SkipCache: true})
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if err != nil && !errors.As(err, &started) {
			return fmt.Errorf("start probe %s: %w", id, err)
		}
		return nil
	}
	return nil // no value to probe with: the next call of a new alert is the probe
}
