package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Timeline item kinds (API.md §13): where an item of an alert's timeline comes from.
const (
	TimelineActivity   = "activity"
	TimelineFinding    = "finding"
	TimelineComment    = "comment"
	TimelineEnrichment = "enrichment"
	TimelineRun        = "workflow_run"
	TimelineDecision   = "approval_decision"
)

// TimelineRow is one item of an alert's timeline as the store reads it: when, what kind, who, what it
// refers to, and the facts a summary is written from (Detail, per kind).
type TimelineRow struct {
	At             time.Time       `bun:"at"`
	Kind           string          `bun:"kind"`
	ActorType      string          `bun:"actor_type"`
	ActorKeyPrefix *string         `bun:"actor_key_prefix"`
	ActorName      *string         `bun:"actor_name"`
	RefType        string          `bun:"ref_type"`
	RefUUID        uuid.UUID       `bun:"ref_uuid,type:uuid"`
	Detail         json.RawMessage `bun:"detail,type:jsonb"`
	Total          int             `bun:"total"`
}

// timelineSQL is an alert's timeline in one statement (prepared: Postgres planned this UNION ALL in
// 2–11 ms and ran it in about 1, docs/PERFORMANCE.md "Alert timeline"): a UNION ALL of one indexed read per source
// (activity_events_alert_idx, alert_findings_alert_idx, comments_alert_idx, alert_indicators' primary
// key, workflow_runs_alert_idx, and the approval request and decision keys), oldest first, paged,
// with the total beside each row. Activity events another source already shows (the finding's
// agent_finding_posted, the comment's comment_added) are left out: one fact, one item. An
// enrichment result's time is its enriched_at when it reads as a timestamp, else the indicator's last
// update.
//
// timelineTemplate is that statement over a subject: {alerts} is the condition on an alert uuid
// column (the alert's, or the case's alerts'), {activity_subject} and {comment_subject} select the
// subject's own activity events and comments. timelineSQL (an alert) and caseTimelineSQL (a case:
// its own activity and comments, and every item of its alerts, API.md §14) are built from it.
const timelineTemplate = `
WITH items AS (
	SELECT e.created_at AS at, 'activity' AS kind, e.actor_type, e.actor_key_prefix, NULL::text AS actor_name,
		'activity_event' AS ref_type, e.uuid AS ref_uuid,
		jsonb_build_object('event_type', e.event_type, 'references', coalesce(e."references", '{}'::jsonb)) AS detail
	FROM activity_events AS e
	WHERE {activity_subject} AND e.event_type NOT IN ('agent_finding_posted', 'comment_added')
	UNION ALL
	SELECT f.posted_at, 'finding', 'agent', f.actor_key_prefix, f.agent_name, 'finding', f.id,
		jsonb_build_object('summary', left(f.summary, 300), 'confidence', f.confidence)
	FROM alert_findings AS f
	WHERE f.alert_uuid {alerts}
	UNION ALL
	SELECT c.created_at, 'comment', c.actor_type, c.author_key_prefix, c.author_key_name, 'comment', c.uuid,
		jsonb_build_object('body', left(c.body, 300), 'edited_at', c.edited_at, 'key_type', c.author_key_type)
	FROM comments AS c
	WHERE {comment_subject}
	UNION ALL
	SELECT CASE WHEN r.value->>'enriched_at' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+){0,1}(Z|[+-]\d\d:\d\d)$'
			THEN (r.value->>'enriched_at')::timestamptz ELSE i.updated_at END,
		'enrichment', 'provider', NULL, r.key, 'indicator', i.uuid,
		jsonb_build_object('indicator_type', i.type, 'indicator_value', left(i.value, 300), 'status', r.value->'status',
			'malice', r.value->'malice', 'error_message', left(r.value->>'error_message', 300))
	FROM alert_indicators AS ai
	JOIN indicators AS i ON i.uuid = ai.indicator_uuid
	CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(i.enrichment_results) = 'object' THEN i.enrichment_results ELSE '{}'::jsonb END) AS r
	WHERE ai.alert_uuid {alerts} AND jsonb_typeof(r.value) = 'object'
	UNION ALL
	SELECT w.created_at, 'workflow_run', w.trigger_source, w.trigger_key_prefix, wf.name, 'workflow_run', w.uuid,
		jsonb_build_object('status', w.status, 'indicator_type', w.indicator_type, 'indicator_value', left(w.indicator_value, 300))
	FROM workflow_runs AS w
	JOIN workflows AS wf ON wf.uuid = w.workflow_uuid
	WHERE w.alert_uuid {alerts}
	UNION ALL
	SELECT d.decided_at, 'approval_decision', 'human', d.key_prefix, coalesce(d.key_name, d.verified_user), 'approval_request', q.uuid,
		jsonb_build_object('decision', d.decision, 'comment', left(d.comment, 300), 'workflow_name', q.workflow_name, 'run_uuid', q.run_uuid)
	FROM workflow_runs AS w
	JOIN workflow_approval_requests AS q ON q.run_uuid = w.uuid
	JOIN workflow_approval_decisions AS d ON d.approval_uuid = q.uuid
	WHERE w.alert_uuid {alerts}
)
SELECT items.*, count(*) OVER () AS total FROM items
ORDER BY at ASC, kind ASC, ref_uuid ASC
LIMIT $2::bigint OFFSET $3::bigint`

var (
	timelineSQL = strings.NewReplacer("{activity_subject}", "e.alert_uuid = $1::uuid", "{comment_subject}", "c.alert_uuid = $1::uuid",
		"{alerts}", "= $1::uuid").Replace(timelineTemplate)
	// caseTimelineSQL: an event about one alert of the case carries both uuids and is read once (an
	// OR, not a second branch). An indicator linked to several of the case's alerts gives one item per
	// link and provider (the alert's timelines show each).
	caseTimelineSQL = strings.NewReplacer(
		"{activity_subject}", "(e.case_uuid = $1::uuid OR e.alert_uuid IN (SELECT uuid FROM alerts WHERE case_uuid = $1::uuid))",
		"{comment_subject}", "(c.case_uuid = $1::uuid OR c.alert_uuid IN (SELECT uuid FROM alerts WHERE case_uuid = $1::uuid))",
		"{alerts}", "IN (SELECT uuid FROM alerts WHERE case_uuid = $1::uuid)").Replace(timelineTemplate)
)

// AlertTimeline reads one page of alert id's timeline, oldest first, and the total number of items.
// The alert's existence is the caller's to check (an unknown alert has no items).
func (s *Store) AlertTimeline(ctx context.Context, id uuid.UUID, p Page) ([]TimelineRow, int, error) {
	return s.readTimeline(ctx, s.timeline, timelineSQL, "alert", id, p)
}

// CaseTimeline reads one page of case id's timeline (its own activity and comments merged with every
// item of its alerts), oldest first, and the total. The case's existence is the caller's to check.
func (s *Store) CaseTimeline(ctx context.Context, id uuid.UUID, p Page) ([]TimelineRow, int, error) {
	return s.readTimeline(ctx, s.caseTimeline, caseTimelineSQL, "case", id, p)
}

func (s *Store) readTimeline(ctx context.Context, prep *prepared, query, what string, id uuid.UUID, p Page) ([]TimelineRow, int, error) {
	stmt, err := prep.get(ctx, s.pool.DB)
	if err != nil {
		return nil, 0, fmt.Errorf("timeline of %s %s: %w", what, id, err)
	}
	rows, err := stmt.QueryContext(ctx, id.String(), p.Limit(), p.Offset())
	if err != nil {
		return nil, 0, fmt.Errorf("timeline of %s %s: %w", what, id, mapErr(err))
	}
	var out []TimelineRow
	if err := s.pool.ScanRows(ctx, rows, &out); err != nil {
		return nil, 0, fmt.Errorf("timeline of %s %s: %w", what, id, mapErr(err))
	}
	total := 0
	if len(out) > 0 {
		total = out[0].Total
	} else if p.Offset() > 0 {
		// A page past the end has no row to read the total from.
		err := s.pool.DB.QueryRowContext(ctx, `SELECT count(*) FROM (`+query+`) AS t`, id.String(), int64(math.MaxInt32), int64(0)).Scan(&total)
		if err != nil {
			return nil, 0, fmt.Errorf("count timeline of %s %s: %w", what, id, mapErr(err))
		}
	}
	return out, total, nil
}
