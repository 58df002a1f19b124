package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// The audit trail is append-only in the database itself: UPDATE, DELETE and TRUNCATE are refused
// whoever asks; only PurgeAuditBefore (the retention job) removes rows, and only those it is asked to.
func TestAuditEventsAppendOnly(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	prefix := "aud_" + uuid.NewString()[:6]
	old := &store.AuditEvent{Action: store.AuditCreated, ResourceType: "api_key", ResourceName: "old", ActorType: store.ActorAPI,
		ActorKeyPrefix: &prefix, CreatedAt: time.Now().Add(-48 * time.Hour),
		Changes: map[string]store.AuditChange{"secret": {From: nil, To: store.AuditRedacted}}}
	fresh := &store.AuditEvent{Action: store.AuditUpdated, ResourceType: "api_key", ResourceName: "fresh", ActorType: store.ActorAPI,
		ActorKeyPrefix: &prefix}
	require.NoError(t, st.AppendAuditEvent(ctx, nil, old))
	require.NoError(t, st.AppendAuditEvent(ctx, nil, fresh))

	for _, stmt := range []string{
		"UPDATE audit_events SET resource_name = 'changed' WHERE uuid = ?",
		"DELETE FROM audit_events WHERE uuid = ?",
	} {
		_, err := st.DB().ExecContext(ctx, stmt, old.UUID)
		require.ErrorContains(t, err, "append-only", stmt)
	}
	_, err := st.DB().ExecContext(ctx, "TRUNCATE audit_events")
	require.ErrorContains(t, err, "append-only")

	got, total, err := st.ListAuditEvents(ctx, store.AuditFilter{ActorKeyPrefix: prefix})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, "fresh", got[0].ResourceName, "newest first")
	require.Equal(t, store.AuditRedacted, got[1].Changes["secret"].To)

	// The purge removes what is older than its cutoff and nothing else (other tests' rows are newer
	// than 24 h, so only this test's old row can go).
	n, err := st.PurgeAuditBefore(ctx, time.Now().Add(-24*time.Hour), 1000)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	got, total, err = st.ListAuditEvents(ctx, store.AuditFilter{ActorKeyPrefix: prefix})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, fresh.UUID, got[0].UUID)

	// The purge's permission ends with its transaction.
	_, err = st.DB().ExecContext(ctx, "DELETE FROM audit_events WHERE uuid = ?", fresh.UUID)
	require.ErrorContains(t, err, "append-only")
}

// Audited commits a change and its audit event together or neither: a change that fails leaves no
// event, and an event that cannot be written undoes the change.
func TestAuditedCommitsChangeAndEventTogether(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	prefix := "aud_" + uuid.NewString()[:6]
	actor := store.Actor{Type: store.ActorAPI, KeyPrefix: prefix}
	doc := func(title string) *store.ContextDocument {
		return &store.ContextDocument{Title: title, DocumentType: "sop", Content: "x"}
	}
	count := func() int {
		_, n, err := st.ListAuditEvents(ctx, store.AuditFilter{ActorKeyPrefix: prefix})
		require.NoError(t, err)
		return n
	}

	ok := doc("audited " + prefix)
	require.NoError(t, st.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		if err := tx.CreateContextDocument(ctx, ok); err != nil {
			return nil, err
		}
		return actor.AuditEvent(store.AuditCreated, "context_document", &ok.UUID, ok.Title, nil), nil
	}))
	_, err := st.GetContextDocument(ctx, ok.UUID)
	require.NoError(t, err)
	require.Equal(t, 1, count())

	// The change fails after writing: nothing stays, no event.
	failed := doc("failed " + prefix)
	err = st.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		if err := tx.CreateContextDocument(ctx, failed); err != nil {
			return nil, err
		}
		return nil, errors.New("refused after the write")
	})
	require.Error(t, err)
	_, err = st.GetContextDocument(ctx, failed.UUID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 1, count())

	// The event cannot be written (its uuid is taken): the change is undone too.
	orphan := doc("orphan " + prefix)
	err = st.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		if err := tx.CreateContextDocument(ctx, orphan); err != nil {
			return nil, err
		}
		e := actor.AuditEvent(store.AuditCreated, "context_document", &orphan.UUID, orphan.Title, nil)
		got, _, err := st.ListAuditEvents(ctx, store.AuditFilter{ActorKeyPrefix: prefix})
		if err != nil {
			return nil, err
		}
		e.UUID = got[0].UUID
		return e, nil
	})
	require.Error(t, err)
	_, err = st.GetContextDocument(ctx, orphan.UUID)
	require.ErrorIs(t, err, store.ErrNotFound, "the change rolled back with its event")
	require.Equal(t, 1, count())

	// Nothing to record (nil event): the change commits alone.
	quiet := doc("quiet " + prefix)
	require.NoError(t, st.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		return nil, tx.CreateContextDocument(ctx, quiet)
	}))
	_, err = st.GetContextDocument(ctx, quiet.UUID)
	require.NoError(t, err)
	for _, id := range []uuid.UUID{ok.UUID, quiet.UUID} {
		require.NoError(t, st.DeleteContextDocument(ctx, id))
	}
}
