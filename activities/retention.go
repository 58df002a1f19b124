package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/retention"
)

// RetentionPurgeBudget bounds one RetentionPurge attempt: it returns Done false after this long,
// and the Temporal workflow calls it again, so no attempt runs for hours.
const RetentionPurgeBudget = 5 * time.Minute

// RetentionPassInfo is what RetentionBegin returns: the pass's cutoffs (nil: kept), as recorded
// when it began.
type RetentionPassInfo struct {
	PassID           string     `json:"pass_id"`
	RawPayloadCutoff *time.Time `json:"raw_payload_cutoff,omitempty"`
	AlertCutoff      *time.Time `json:"alert_cutoff,omitempty"`
	AuditCutoff      *time.Time `json:"audit_cutoff,omitempty"`
}

// RetentionPurgeInput asks RetentionPurge to purge one kind (retention.Kinds) of a pass.
type RetentionPurgeInput struct {
	PassID string `json:"pass_id"`
	Kind   string `json:"kind"`
}

// RetentionPurgeResult says whether the kind is done and what this attempt purged (earlier attempts'
// rows are counted on the pass, in the database).
type RetentionPurgeResult struct {
	Done   bool             `json:"done"`
	Counts map[string]int64 `json:"counts,omitempty"`
}

// RetentionResult is what RetentionFinish returns: the pass's counts, as its audit event has them.
type RetentionResult struct {
	PassID string           `json:"pass_id"`
	Counts map[string]int64 `json:"counts"`
}

func (a *Activities) retention() (*retention.Service, error) {
	if a.Retention == nil {
		return nil, temporal.NewNonRetryableApplicationError("retention is not configured on this worker", "NotConfigured", nil)
	}
	return a.Retention, nil
}

// RetentionBegin records the pass (idempotent: a retry returns the pass as first recorded).
func (a *Activities) RetentionBegin(ctx context.Context, passID string) (RetentionPassInfo, error) {
	svc, err := a.retention()
	if err != nil {
		return RetentionPassInfo{}, err
	}
	p, err := svc.Begin(ctx, passID)
	if err != nil {
		return RetentionPassInfo{}, err
	}
	return RetentionPassInfo{PassID: p.PassID, RawPayloadCutoff: p.RawPayloadCutoff, AlertCutoff: p.AlertCutoff,
		AuditCutoff: p.AuditCutoff}, nil
}

// RetentionPurge purges one kind in batches, one transaction each, heartbeating after every batch
// with the rows purged so far by this attempt. Idempotent: a retried attempt (the worker died) finds
// what the last committed batch left and goes on; a batch cut short rolled back whole.
func (a *Activities) RetentionPurge(ctx context.Context, in RetentionPurgeInput) (RetentionPurgeResult, error) {
	svc, err := a.retention()
	if err != nil {
		return RetentionPurgeResult{}, err
	}
	pass, err := svc.Pass(ctx, in.PassID) // its cutoffs as recorded when it began
	if err != nil {
		return RetentionPurgeResult{}, err
	}
	total := map[string]int64{}
	activity.RecordHeartbeat(ctx, total)
	done, err := svc.Purge(ctx, pass, in.Kind, RetentionPurgeBudget, func(batch map[string]int64) {
		for k, n := range batch {
			total[k] += n
		}
		activity.RecordHeartbeat(ctx, total)
	})
	if err != nil {
		return RetentionPurgeResult{}, err
	}
	return RetentionPurgeResult{Done: done, Counts: total}, nil
}

// RetentionFinish ends the pass and writes its one `purged` audit event (once, however often it is
// retried) and returns its counts.
func (a *Activities) RetentionFinish(ctx context.Context, passID string) (RetentionResult, error) {
	svc, err := a.retention()
	if err != nil {
		return RetentionResult{}, err
	}
	p, err := svc.Finish(ctx, passID)
	if err != nil {
		return RetentionResult{}, err
	}
	return RetentionResult{PassID: p.PassID, Counts: p.Counts}, nil
}
