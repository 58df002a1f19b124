package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// IngestAlert is a normalized alert ready to be committed by Ingest.
type IngestAlert struct {
	UUID        uuid.UUID
	Title       string
	Severity    string
	SourceName  string
	OccurredAt  time.Time // zero: the ingestion time
	Description *string
	Tags        []string
	Fingerprint string
	RawPayload  []byte // the request body: a JSON object, stored as jsonb as is
	// OriginalBody is the body as received when RawPayload is it with hostile characters replaced
	// (the alert is then flagged input_sanitized); nil otherwise.
	OriginalBody []byte
	Normalized   []byte // JSON of the plugin's output (fields, rule reference, pass-1 indicators)
	// The caller, for the activity events.
	ActorType      string
	ActorKeyPrefix string
}

// IngestResult is what Ingest did.
type IngestResult struct {
	AlertUUID      uuid.UUID
	Duplicate      bool // a repeat within the dedup window: no alert, no pipeline
	DuplicateCount int
}

// ErrIngestRace is returned when Ingest could not settle a fingerprint race after several attempts
// (in practice never: each retry sees the winner's commit).
var ErrIngestRace = errors.New("ingest: fingerprint race not settled")

// ingestSQL is the whole ingestion write in one statement (one round trip, one commit), prepared
// once per connection (Store.ingest: parsing and planning it cost more than executing it):
//   - fp claims the fingerprint, or takes it over when the window has passed (window 0: always);
//   - ins/ob/created insert the alert, its outbox row and the alert_created event when fp claimed it;
//   - dup/dup_ev count a repeat on the window's owner otherwise;
//   - the final SELECT reports what happened (data-modifying CTEs run whether or not it reads them).
//
// The dispatcher is woken after the commit by a separate, coalesced NOTIFY (outboxWaker).
//
// A concurrent identical ingest blocks on fp's row until the first commits, then finds the conflict.
// Its statement snapshot predates that commit, so dup may see no owner: Ingest then runs again.
const ingestSQL = `WITH fp AS (
	INSERT INTO alert_fingerprints AS f (fingerprint, alert_uuid, created_at)
	VALUES ($1::text, $2::uuid, now())
	ON CONFLICT (fingerprint) DO UPDATE SET alert_uuid = EXCLUDED.alert_uuid, created_at = EXCLUDED.created_at
	WHERE $3::bigint = 0 OR f.created_at <= now() - make_interval(secs => $3::bigint)
	RETURNING alert_uuid
), ins AS (
	INSERT INTO alerts (uuid, title, severity, source_name, occurred_at, ingested_at, fingerprint, tags,
		description, raw_payload, normalized, input_sanitized, original_body, created_at, updated_at)
	SELECT alert_uuid, $4::text, $5::text, $6::text, coalesce($7::timestamptz, now()), now(), $1, $8::text[], $9::text, $10::jsonb, $11::jsonb,
		$14::bytea IS NOT NULL, $14::bytea, now(), now()
	FROM fp
	RETURNING uuid
), ob AS (
	INSERT INTO alert_outbox (alert_uuid, kind) SELECT uuid, 'pipeline' FROM ins RETURNING id
), created AS (
	INSERT INTO activity_events (event_type, actor_type, actor_key_prefix, alert_uuid, "references")
	SELECT 'alert_created', $12::text, $13::text, uuid, jsonb_build_object('source_name', $6::text) FROM ins
	RETURNING 1
), dup AS (
	UPDATE alerts AS a SET duplicate_count = a.duplicate_count + 1, last_seen_at = now(), updated_at = now()
	FROM alert_fingerprints AS o
	WHERE o.fingerprint = $1 AND a.uuid = o.alert_uuid AND NOT EXISTS (SELECT 1 FROM fp)
	RETURNING a.uuid, a.duplicate_count
), dup_ev AS (
	INSERT INTO activity_events (event_type, actor_type, actor_key_prefix, alert_uuid, "references")
	SELECT 'alert_deduplicated', $12::text, $13::text, uuid, jsonb_build_object('duplicate_count', duplicate_count) FROM dup
	RETURNING 1
)
SELECT (SELECT uuid FROM ins) AS inserted,
	(SELECT uuid FROM dup) AS duplicate_of,
	coalesce((SELECT duplicate_count FROM dup), 0) AS duplicate_count`

// Ingest commits a new alert with its outbox row and alert_created event, or, when the fingerprint
// is owned by an alert created less than window ago, counts a repeat on that alert (duplicate_count,
// last_seen_at, an alert_deduplicated event). window 0 disables dedup. Everything happens in one
// statement: one round trip and one durable commit; a new alert then wakes the dispatcher.
func (s *Store) Ingest(ctx context.Context, a IngestAlert, window time.Duration) (IngestResult, error) {
	began := time.Now()
	if a.UUID == uuid.Nil {
		a.UUID = uuid.New()
	}
	normalized := a.Normalized
	if len(normalized) == 0 {
		normalized = []byte("{}")
	}
	var occurredArg, descArg, prefixArg, originalArg any // nil: SQL NULL
	if !a.OccurredAt.IsZero() {
		occurredArg = a.OccurredAt.UTC()
	}
	if a.Description != nil {
		descArg = *a.Description
	}
	if a.ActorKeyPrefix != "" {
		prefixArg = a.ActorKeyPrefix
	}
	if a.OriginalBody != nil {
		originalArg = a.OriginalBody
	}
	stmt, err := s.ingest.get(ctx, s.pool.DB)
	if err != nil {
		return IngestResult{}, fmt.Errorf("ingest alert: %w", err)
	}
	secs := int64(window / time.Second)
	for range 5 {
		var inserted, duplicateOf sql.Null[uuid.UUID]
		var duplicateCount int
		err := stmt.QueryRowContext(ctx, a.Fingerprint, a.UUID.String(), secs, a.Title, a.Severity, a.SourceName, occurredArg,
			pgTextArray(a.Tags), descArg, string(a.RawPayload), string(normalized), a.ActorType, prefixArg, originalArg).
			Scan(&inserted, &duplicateOf, &duplicateCount)
		if err != nil {
			return IngestResult{}, fmt.Errorf("ingest alert: %w", mapErr(err))
		}
		switch {
		case inserted.Valid:
			s.wake.wakeAfter(time.Since(began)) // the 202's own cost, for the dispatcher's admission
			return IngestResult{AlertUUID: inserted.V}, nil
		case duplicateOf.Valid:
			return IngestResult{AlertUUID: duplicateOf.V, Duplicate: true, DuplicateCount: duplicateCount}, nil
		}
	}
	return IngestResult{}, ErrIngestRace
}
