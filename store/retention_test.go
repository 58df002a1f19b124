package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// Every table that refers to alerts (a foreign key to alerts, or an alert_uuid column) is either
// purged with its alert by retention or kept on purpose with a reason: a new table (comments, case
// links, ...) fails here until it is added to one of the two lists in store/retention.go.
func TestRetentionCoversEveryAlertTable(t *testing.T) {
	st := testStore(t)
	var tables []string
	require.NoError(t, st.DB().NewRaw(`
		SELECT DISTINCT c.table_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND c.column_name = 'alert_uuid' AND t.table_type = 'BASE TABLE'
		UNION
		SELECT DISTINCT conrelid::regclass::text FROM pg_constraint
		WHERE contype = 'f' AND confrelid = 'alerts'::regclass AND conrelid <> 'alerts'::regclass
		ORDER BY 1`).Scan(context.Background(), &tables))
	require.NotEmpty(t, tables)
	purged, kept := store.RetentionAlertTables()
	for _, tb := range tables {
		_, isKept := kept[tb]
		require.True(t, slices.Contains(purged, tb) || isKept,
			"table %s refers to alerts: add it to alertTables (purged with the alert) or retentionKeptAlertTables (with why) in store/retention.go", tb)
	}
	for tb, why := range kept {
		require.NotEmpty(t, why, tb)
		require.False(t, slices.Contains(purged, tb), "%s both purged and kept", tb)
	}
	t.Logf("tables referring to alerts: %v", tables)
}
