package alerts_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testStore is the package's own fresh, migrated database (testenv.Store); tests share it: give
// rows unique keys.
func testStore(t testing.TB) *store.Store { return testenv.Store(t) }

// newAlert commits a fresh Open alert through the ingest statement and returns its uuid.
func newAlert(t *testing.T, st *store.Store) uuid.UUID {
	t.Helper()
	res, err := st.Ingest(context.Background(), store.IngestAlert{Title: "alert " + uuid.NewString(), Severity: "Low",
		SourceName: "generic", Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`),
		ActorType: store.ActorAPI}, time.Hour)
	require.NoError(t, err)
	return res.AlertUUID
}

// activity returns the alert's activity event types, oldest first.
func activity(t *testing.T, st *store.Store, id uuid.UUID) []store.ActivityEvent {
	t.Helper()
	rows, _, err := st.ListActivity(context.Background(), store.ActivityFilter{AlertUUID: &id, Page: store.Page{Number: 1, Size: 100}})
	require.NoError(t, err)
	out := make([]store.ActivityEvent, len(rows))
	for i, e := range rows {
		out[len(rows)-1-i] = e
	}
	return out
}
