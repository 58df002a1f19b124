package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// CircuitPolicy says when a provider's circuit opens and how long it stays open.
type CircuitPolicy struct {
	// Failures is how many consecutive failed calls open the circuit.
	Failures int
	// Cooldown is how long an open circuit refuses calls before one half-open probe may go out (and
	// again after each failed probe).
	Cooldown time.Duration
	// ProbeFor is how long the half-open probe holds the circuit (other calls are still refused);
	// past it, another probe may go out.
	ProbeFor time.Duration
}

// DefaultCircuitPolicy: 5 consecutive failures open the circuit for 30 s; a probe holds it for up to
// a minute.
func DefaultCircuitPolicy() CircuitPolicy {
	return CircuitPolicy{Failures: 5, Cooldown: 30 * time.Second, ProbeFor: time.Minute}
}

// Circuit is the breaker state of one provider (no row: closed, no failure).
type Circuit struct {
	ProviderName string     `bun:"provider_name"`
	Failures     int        `bun:"failures"`
	OpenedAt     *time.Time `bun:"opened_at"`
	RetryAt      *time.Time `bun:"retry_at"`
	ProbeUntil   *time.Time `bun:"probe_until"`
	// Due: open, the cool-down over and no probe in flight (computed on the database's clock).
	Due bool `bun:"due"`
}

// Open reports whether the circuit is open (half-open included).
func (c Circuit) Open() bool { return c.OpenedAt != nil }

// CallCircuit is a provider's breaker state as a call finds it: Tracked when it has a circuit row
// (failures being counted, or open), Open when that circuit is open (half-open included).
type CallCircuit struct {
	Tracked, Open bool
}

// GetProviderForCall loads a provider and its circuit's state in one query: what every provider
// call reads first.
func (s *Store) GetProviderForCall(ctx context.Context, name string) (EnrichmentProvider, CallCircuit, error) {
	var row struct {
		EnrichmentProvider `bun:",extend"`
		CircuitTracked     bool `bun:"circuit_tracked"`
		CircuitOpen        bool `bun:"circuit_open"`
	}
	err := s.db.NewSelect().Model(&row).ColumnExpr("enrichment_provider.*").
		ColumnExpr("c.provider_name IS NOT NULL AS circuit_tracked").
		ColumnExpr("coalesce(c.opened_at IS NOT NULL, false) AS circuit_open").
		Join("LEFT JOIN provider_circuits AS c ON c.provider_name = enrichment_provider.provider_name").
		Where("enrichment_provider.provider_name = ?", name).Scan(ctx)
	if err != nil {
		return EnrichmentProvider{}, CallCircuit{}, fmt.Errorf("get provider %q: %w", name, mapErr(err))
	}
	return row.EnrichmentProvider, CallCircuit{Tracked: row.CircuitTracked, Open: row.CircuitOpen}, nil
}

// CircuitAdmit reports whether a call to provider, whose circuit the call found in state c
// (GetProviderForCall), may go out now: always while the circuit is closed; while it is open, only
// as the one half-open probe once the cool-down is over (claimed atomically, so one worker of many
// sends it). A success needs CircuitSuccess only when c.Tracked, so a provider that never fails costs
// no circuit statement at all; a failure recorded by a concurrent call meanwhile is reset by the next
// success instead of this one.
func (s *Store) CircuitAdmit(ctx context.Context, provider string, c CallCircuit, policy CircuitPolicy) (bool, error) {
	if !c.Open {
		return true, nil
	}
	res, err := s.db.NewRaw(`UPDATE provider_circuits SET probe_until = now() + make_interval(secs => ?1), updated_at = now()
		WHERE provider_name = ?0 AND opened_at IS NOT NULL AND retry_at <= now() AND (probe_until IS NULL OR probe_until < now())
		RETURNING 1`, provider, policy.ProbeFor.Seconds()).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("claim probe of %s: %w", provider, mapErr(err))
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// CircuitFailure counts a failed call (the provider did not answer, or answered 5xx). The circuit
// opens at policy.Failures consecutive failures; an open circuit (a failed probe) stays open for
// another cool-down. It reports whether the circuit is open now.
func (s *Store) CircuitFailure(ctx context.Context, provider string, policy CircuitPolicy) (bool, error) {
	var open bool
	err := s.db.NewRaw(`INSERT INTO provider_circuits AS c (provider_name, failures, opened_at, retry_at)
		VALUES (?0, 1, CASE WHEN ?1 <= 1 THEN now() END, CASE WHEN ?1 <= 1 THEN now() + make_interval(secs => ?2) END)
		ON CONFLICT (provider_name) DO UPDATE SET
			failures = c.failures + 1,
			opened_at = CASE WHEN c.opened_at IS NOT NULL OR c.failures + 1 >= ?1 THEN coalesce(c.opened_at, now()) END,
			retry_at = CASE WHEN c.opened_at IS NOT NULL OR c.failures + 1 >= ?1 THEN now() + make_interval(secs => ?2) END,
			probe_until = NULL, updated_at = now()
		RETURNING opened_at IS NOT NULL`, provider, policy.Failures, policy.Cooldown.Seconds()).Scan(ctx, &open)
	if err != nil {
		return false, fmt.Errorf("count failure of %s: %w", provider, mapErr(err))
	}
	return open, nil
}

// CircuitSuccess records that provider answered: its circuit closes and its failure count restarts.
// It reports whether the circuit was open. Callers skip it when CircuitAdmit found no row.
func (s *Store) CircuitSuccess(ctx context.Context, provider string) (bool, error) {
	var wasOpen bool
	err := s.db.NewRaw(`DELETE FROM provider_circuits WHERE provider_name = ? RETURNING opened_at IS NOT NULL`, provider).Scan(ctx, &wasOpen)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("close circuit of %s: %w", provider, mapErr(err))
	}
	return wasOpen, nil
}

// Circuits returns every provider with a circuit row (failures counted or open).
func (s *Store) Circuits(ctx context.Context) ([]Circuit, error) {
	var out []Circuit
	err := s.db.NewRaw(`SELECT provider_name, failures, opened_at, retry_at, probe_until,
			opened_at IS NOT NULL AND retry_at <= now() AND (probe_until IS NULL OR probe_until < now()) AS due
		FROM provider_circuits ORDER BY provider_name`).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list circuits: %w", mapErr(err))
	}
	return out, nil
}

// Parking: FinishEnrichment records, in the statement that marks the alert, which providers failed
// the alert's enrichment: the alert is re-run once each answers again (EnqueueParkedReruns).
// Providers no longer failing are unparked. Parking again after a queued re-run counts that re-run.
// A deleted alert parks nothing.

// ParkedProviders lists the providers with alerts waiting for a re-run (not yet queued, fewer than
// maxReruns failed re-runs).
func (s *Store) ParkedProviders(ctx context.Context, maxReruns int) ([]string, error) {
	var out []string
	err := s.db.NewRaw(`SELECT DISTINCT provider_name FROM enrichment_parked WHERE rerun_at IS NULL AND reruns < ? ORDER BY 1`,
		maxReruns).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list parked providers: %w", mapErr(err))
	}
	return out, nil
}

// ParkedTargets returns up to limit distinct indicators (type, value) of the alerts parked for
// provider whose type is one of types, oldest parking first: the values a probe may use.
func (s *Store) ParkedTargets(ctx context.Context, provider string, types []string, limit int) ([]IndicatorKey, error) {
	var out []IndicatorKey
	err := s.db.NewRaw(`SELECT type, value FROM (
			SELECT DISTINCT ON (i.type, i.value) i.type, i.value, p.parked_at
			FROM enrichment_parked AS p
			JOIN alert_indicators AS ai ON ai.alert_uuid = p.alert_uuid
			JOIN indicators AS i ON i.uuid = ai.indicator_uuid
			WHERE p.provider_name = ?0 AND i.type = ANY (?1::text[])
			ORDER BY i.type, i.value, p.parked_at
		) AS t ORDER BY parked_at LIMIT ?2`, provider, pgdialectArray(types), limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("parked indicators of %s: %w", provider, mapErr(err))
	}
	return out, nil
}

// EnqueueParkedReruns queues a pipeline re-run (outbox kind rerun, event alert_enrichment_requested
// by the system) of up to limit alerts parked for provider with fewer than maxReruns failed re-runs,
// marks them queued, and wakes the dispatcher; one transaction, rows taken FOR UPDATE SKIP LOCKED so
// that workers running it together split the work. An alert with a re-run already waiting in the
// outbox gets no second one. It returns how many alerts were marked.
func (s *Store) EnqueueParkedReruns(ctx context.Context, provider string, limit, maxReruns int) (int, error) {
	var n int
	err := s.db.NewRaw(`WITH picked AS (
			SELECT alert_uuid FROM enrichment_parked
			WHERE provider_name = ?0 AND rerun_at IS NULL AND reruns < ?2
			ORDER BY parked_at LIMIT ?1 FOR UPDATE SKIP LOCKED
		), marked AS (
			UPDATE enrichment_parked AS p SET rerun_at = now() FROM picked
			WHERE p.provider_name = ?0 AND p.alert_uuid = picked.alert_uuid RETURNING p.alert_uuid
		), ob AS (
			INSERT INTO alert_outbox (alert_uuid, kind)
			SELECT m.alert_uuid, ?3 FROM marked AS m
			WHERE NOT EXISTS (SELECT 1 FROM alert_outbox AS o WHERE o.alert_uuid = m.alert_uuid AND o.started_at IS NULL)
			RETURNING alert_uuid
		), ev AS (
			INSERT INTO activity_events (event_type, actor_type, alert_uuid, "references")
			SELECT 'alert_enrichment_requested', ?4, alert_uuid, jsonb_build_object('reason', 'provider_recovered', 'provider', ?0::text)
			FROM ob RETURNING 1
		)
		SELECT (SELECT count(*) FROM marked) + 0 * (SELECT count(*) FROM ev)`,
		provider, limit, maxReruns, OutboxRerun, ActorSystem).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("queue re-runs of alerts parked for %s: %w", provider, mapErr(err))
	}
	if n > 0 {
		s.wake.wake()
	}
	return n, nil
}
