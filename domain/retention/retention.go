// Package retention owns the rules of forgetting (API.md §15, docs/OPERATIONS.md "Retention"):
// which alerts lose their raw payload, which closed alerts go with everything that belongs to them,
// which audit events go, in batches small enough that no lock is held for long, and the one `purged`
// audit event each pass writes with its counts. The Temporal workflow RetentionPass runs a pass
// through the retention activities, which are adapters over this service.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-soc/vigil/store"
)

// Kinds of data a pass purges, in the order a pass handles them. They are also the `kind` label of
// vigil_retention_purged_rows_total together with the table names of store.RetentionAlertTables.
const (
	KindRawPayloads = store.RetentionRawPayloads
	KindAlerts      = store.RetentionAlerts
	KindAuditEvents = store.RetentionAuditEvents
)

// Kinds returns the kinds in the order a pass handles them.
func Kinds() []string { return []string{KindRawPayloads, KindAlerts, KindAuditEvents} }

// DefaultAuditDays is AUDIT_RETENTION_DAYS's default.
const DefaultAuditDays = 400

// Default batch sizes: rows one transaction changes. An alert batch deletes each alert with its
// links, findings, comments, activity and events, so it is the smaller.
const (
	DefaultAlertBatch   = 100
	DefaultPayloadBatch = 200
	DefaultAuditBatch   = 1000
)

// AuditResourceType is the resource_type of the `purged` audit event.
const AuditResourceType = "retention"

// Policy is the three settings of API.md §15, in days; 0 keeps that kind forever.
type Policy struct {
	RawPayloadDays int // RAW_PAYLOAD_RETENTION_DAYS
	AlertDays      int // ALERT_RETENTION_DAYS
	AuditDays      int // AUDIT_RETENTION_DAYS
}

// Validate refuses negative days.
func (p Policy) Validate() error {
	var errs []error
	for name, d := range map[string]int{"raw payload": p.RawPayloadDays, "alert": p.AlertDays, "audit": p.AuditDays} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s retention days must be 0 (keep) or more, not %d", name, d))
		}
	}
	return errors.Join(errs...)
}

// cutoff is now less days, nil when days is 0 (keep).
func cutoff(now time.Time, days int) *time.Time {
	if days <= 0 {
		return nil
	}
	t := now.Add(-time.Duration(days) * 24 * time.Hour)
	return &t
}

// Store is what the service needs of the store.
type Store interface {
	BeginRetentionPass(ctx context.Context, p store.RetentionPass) (store.RetentionPass, error)
	GetRetentionPass(ctx context.Context, passID string) (store.RetentionPass, error)
	ClearRawPayloadsBefore(ctx context.Context, passID string, cutoff time.Time, limit int) (map[string]int64, error)
	PurgeClosedAlertsBefore(ctx context.Context, passID string, cutoff time.Time, limit int) (map[string]int64, error)
	PurgeAuditEventsForPass(ctx context.Context, passID string, cutoff time.Time, limit int) (int, error)
	FinishRetentionPass(ctx context.Context, passID string, event func(store.RetentionPass) *store.AuditEvent) (store.RetentionPass, bool, error)
}

// Counter receives the rows each committed batch purged, by kind (kit/metrics.Worker).
type Counter interface {
	RetentionPurged(kind string, n int64)
}

// Options tunes a Service; zero values take the defaults.
type Options struct {
	AlertBatch, PayloadBatch, AuditBatch int
	Counter                              Counter          // nil counts nothing
	Now                                  func() time.Time // the clock cutoffs are taken from (time.Now)
	// Rest is how long Purge rests after each batch, as a multiple of the batch's own duration (0:
	// DefaultRest; negative: none), so a pass leaves the database that share of its time for the
	// ingest and the pipelines.
	Rest float64
}

// DefaultRest: a pass rests as long as each batch took, so it uses at most about half of what one
// database connection can do.
const DefaultRest = 1.0

// Service runs retention passes under one Policy.
type Service struct {
	st     Store
	policy Policy
	opts   Options
}

// New returns a Service; it refuses an invalid policy.
func New(st Store, p Policy, opts Options) (*Service, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if opts.AlertBatch <= 0 {
		opts.AlertBatch = DefaultAlertBatch
	}
	if opts.PayloadBatch <= 0 {
		opts.PayloadBatch = DefaultPayloadBatch
	}
	if opts.AuditBatch <= 0 {
		opts.AuditBatch = DefaultAuditBatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rest == 0 {
		opts.Rest = DefaultRest
	}
	return &Service{st: st, policy: p, opts: opts}, nil
}

// Policy returns the service's settings.
func (s *Service) Policy() Policy { return s.policy }

// Begin starts the pass passID (the Temporal workflow id of its run) with cutoffs taken from the
// clock now, or returns the pass as it began when it exists (a pass resumed by a retried activity
// keeps its first cutoffs).
func (s *Service) Begin(ctx context.Context, passID string) (store.RetentionPass, error) {
	if passID == "" {
		return store.RetentionPass{}, errors.New("retention pass: empty pass id")
	}
	now := s.opts.Now().UTC()
	return s.st.BeginRetentionPass(ctx, store.RetentionPass{
		PassID:           passID,
		RawPayloadCutoff: cutoff(now, s.policy.RawPayloadDays),
		AlertCutoff:      cutoff(now, s.policy.AlertDays),
		AuditCutoff:      cutoff(now, s.policy.AuditDays),
	})
}

// Pass loads a pass as it began (store.ErrNotFound when it never did).
func (s *Service) Pass(ctx context.Context, passID string) (store.RetentionPass, error) {
	return s.st.GetRetentionPass(ctx, passID)
}

// Batch purges one batch of kind under the pass's cutoff, in one transaction, and returns what it
// purged (empty: nothing of kind is left to purge, or the pass keeps kind).
func (s *Service) Batch(ctx context.Context, pass store.RetentionPass, kind string) (map[string]int64, error) {
	return s.batch(ctx, pass, kind, 0)
}

// batchSize is kind's batch size, divided by shrink (1 or more; 0 counts as 1), at least 1.
func (s *Service) batchSize(kind string, shrink int) int {
	n := map[string]int{KindRawPayloads: s.opts.PayloadBatch, KindAlerts: s.opts.AlertBatch, KindAuditEvents: s.opts.AuditBatch}[kind]
	return max(1, n/max(1, shrink))
}

func (s *Service) batch(ctx context.Context, pass store.RetentionPass, kind string, shrink int) (map[string]int64, error) {
	counts := map[string]int64{}
	switch kind {
	case KindRawPayloads:
		if pass.RawPayloadCutoff == nil {
			return counts, nil
		}
		c, err := s.st.ClearRawPayloadsBefore(ctx, pass.PassID, *pass.RawPayloadCutoff, s.batchSize(kind, shrink))
		if err != nil {
			return nil, err
		}
		counts = c
	case KindAlerts:
		if pass.AlertCutoff == nil {
			return counts, nil
		}
		c, err := s.st.PurgeClosedAlertsBefore(ctx, pass.PassID, *pass.AlertCutoff, s.batchSize(kind, shrink))
		if err != nil {
			return nil, err
		}
		counts = c
	case KindAuditEvents:
		if pass.AuditCutoff == nil {
			return counts, nil
		}
		n, err := s.st.PurgeAuditEventsForPass(ctx, pass.PassID, *pass.AuditCutoff, s.batchSize(kind, shrink))
		if err != nil {
			return nil, err
		}
		if n > 0 {
			counts[KindAuditEvents] = int64(n)
		}
	default:
		return nil, fmt.Errorf("retention: unknown kind %q", kind)
	}
	if s.opts.Counter != nil {
		for k, n := range counts {
			s.opts.Counter.RetentionPurged(k, n)
		}
	}
	return counts, nil
}

// maxBatchFailures is how many failed batches in a row Purge absorbs (each retried at half the
// size: a batch that timed out on a loaded database goes through smaller) before it gives up.
const maxBatchFailures = 5

// Purge runs batches of kind until none is left (done true), ctx ends, or budget has passed (done
// false: call again). After each committed batch it calls progress with the batch's counts, then
// rests (Options.Rest) before the next. A
// failed batch (rolled back whole) is retried at half the size, up to maxBatchFailures in a row;
// the smaller size holds for the rest of the call.
func (s *Service) Purge(ctx context.Context, pass store.RetentionPass, kind string, budget time.Duration,
	progress func(batch map[string]int64)) (done bool, err error) {
	deadline := time.Now().Add(budget)
	shrink, failures := 1, 0
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		began := time.Now()
		counts, err := s.batch(ctx, pass, kind, shrink)
		if err != nil {
			failures++
			if failures >= maxBatchFailures || ctx.Err() != nil {
				return false, fmt.Errorf("retention %s: %d batches failed in a row: %w", kind, failures, err)
			}
			shrink *= 2
			continue
		}
		failures = 0
		if len(counts) == 0 {
			return true, nil
		}
		if progress != nil {
			progress(counts)
		}
		if budget > 0 && time.Now().After(deadline) {
			return false, nil
		}
		if s.opts.Rest > 0 {
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(time.Duration(float64(time.Since(began)) * s.opts.Rest)):
			}
		}
	}
}

// Finish ends the pass and writes its one `purged` audit event (action purged, resource_type
// retention, resource_name the pass id, actor system): changes holds, per kind, the rows purged as
// `to` (every kind of Kinds present, 0 included) and each cutoff used. A finish retried after it
// committed writes no second event.
func (s *Service) Finish(ctx context.Context, passID string) (store.RetentionPass, error) {
	p, _, err := s.st.FinishRetentionPass(ctx, passID, s.auditEvent)
	return p, err
}

func (s *Service) auditEvent(p store.RetentionPass) *store.AuditEvent {
	changes := map[string]store.AuditChange{}
	for _, k := range Kinds() {
		changes[k] = store.AuditChange{To: int64(0)}
	}
	for k, n := range p.Counts {
		changes[k] = store.AuditChange{To: n}
	}
	for name, c := range map[string]*time.Time{"raw_payload_cutoff": p.RawPayloadCutoff, "alert_cutoff": p.AlertCutoff,
		"audit_cutoff": p.AuditCutoff} {
		if c != nil {
			changes[name] = store.AuditChange{To: c.UTC().Format(time.RFC3339)}
		}
	}
	return &store.AuditEvent{
		Action:       store.AuditPurged,
		ResourceType: AuditResourceType,
		ResourceName: p.PassID,
		ActorType:    store.ActorSystem,
		Changes:      changes,
	}
}
