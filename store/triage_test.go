package store_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

// lastOrdered keeps the last statement with an ORDER BY a store ran (bun's formatted SQL).
type lastOrdered struct {
	mu  sync.Mutex
	sql string
}

func (h *lastOrdered) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (h *lastOrdered) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, "ORDER BY") {
		h.mu.Lock()
		h.sql = e.Query
		h.mu.Unlock()
	}
}

var errRollBack = errors.New("roll back")

// The console's triage order (store.AlertSortTriage): open (status other than Closed) first,
// unassigned first, severity worst first, oldest first. Among 8 000 alerts made in a transaction
// that is rolled back (so no other test sees them), page 1 of ListAlerts' own statement equals the
// order computed here in Go from the rule, and Postgres answers it by walking alerts_triage_idx
// (no sort of every alert: the queue's default page stays fast at 100 000 alerts).
func TestTriageOrderWalksItsIndex(t *testing.T) {
	ctx := context.Background()
	own, err := store.Open(ctx, testenv.DatabaseURL(t), store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = own.Close() })
	_ = testenv.Store(t) // migrated
	hook := &lastOrdered{}
	//lint:ignore SA1019 WithQueryHook returns a copy, and the store keeps its own pool: the hook must go on that pool (this test's own store)
	own.DB().AddQueryHook(hook)
	_, _, err = own.ListAlerts(ctx, store.AlertFilter{SortBy: store.AlertSortTriage, Page: store.Page{Number: 1, Size: 50}})
	require.NoError(t, err)
	hook.mu.Lock()
	page1 := hook.sql
	hook.mu.Unlock()
	require.Contains(t, page1, "LIMIT 50")

	// Its own connection: 8 000 inserts can outlast the store's 5 s network timeout on a busy machine.
	bulk := bun.NewDB(sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(testenv.DatabaseURL(t)), pgdriver.WithTimeout(3*time.Minute))), pgdialect.New())
	t.Cleanup(func() { _ = bulk.Close() })
	tag := "triage-" + uuid.NewString()[:8]
	err = bulk.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO alerts (title, severity, status, enrichment_status, is_enriched, source_name, occurred_at,
				tags, raw_payload, close_classification, fingerprint, created_at, assignee)
			SELECT 'triage ' || g, (ARRAY['Pending','Informational','Low','Medium','High','Critical'])[g % 6 + 1],
				CASE WHEN g % 3 = 0 THEN 'Closed' ELSE (ARRAY['Open','Triaging','Escalated'])[g % 3 + 1] END,
				'Enriched', true, 'generic', now() - g * interval '7 seconds', ARRAY[?], '{}',
				CASE WHEN g % 3 = 0 THEN ? END, ? || g, now() - (g * 7919 % 8000) * interval '13 seconds',
				CASE WHEN g % 4 = 0 THEN 'analyst-' || (g % 5) END
			FROM generate_series(1, 8000) g`, tag, store.CloseClassifications()[0], tag+"-")
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `ANALYZE alerts`); err != nil {
			return err
		}
		var plan []string
		if err := tx.NewRaw("EXPLAIN "+page1).Scan(ctx, &plan); err != nil {
			return err
		}
		joined := strings.Join(plan, "\n")
		require.Contains(t, joined, "alerts_triage_idx", joined)
		require.NotContains(t, joined, "Sort  (", "no sort of every alert:\n%s", joined)

		var got []uuid.UUID
		if err := tx.NewRaw(`SELECT uuid FROM (`+page1+`) AS p`).Scan(ctx, &got); err != nil {
			return err
		}
		type row struct {
			UUID      uuid.UUID `bun:"uuid"`
			Status    string    `bun:"status"`
			Assignee  *string   `bun:"assignee"`
			Severity  string    `bun:"severity"`
			CreatedAt time.Time `bun:"created_at"`
		}
		var all []row
		if err := tx.NewRaw(`SELECT uuid, status, assignee, severity, created_at FROM alerts`).Scan(ctx, &all); err != nil {
			return err
		}
		rank := map[string]int{"Critical": 0, "High": 1, "Medium": 2, "Low": 3, "Informational": 4, "Pending": 5}
		b2i := func(b bool) int {
			if b {
				return 1
			}
			return 0
		}
		slices.SortFunc(all, func(a, b row) int {
			for _, d := range []int{
				b2i(a.Status == store.StatusClosed) - b2i(b.Status == store.StatusClosed),
				b2i(a.Assignee != nil && *a.Assignee != "") - b2i(b.Assignee != nil && *b.Assignee != ""),
				rank[a.Severity] - rank[b.Severity],
				a.CreatedAt.Compare(b.CreatedAt),
				strings.Compare(a.UUID.String(), b.UUID.String()),
			} {
				if d != 0 {
					return d
				}
			}
			return 0
		})
		want := make([]uuid.UUID, 0, 50)
		for _, r := range all[:50] {
			want = append(want, r.UUID)
		}
		require.Equal(t, want, got, "page 1 in triage order")
		return errRollBack
	})
	require.ErrorIs(t, err, errRollBack)
}
