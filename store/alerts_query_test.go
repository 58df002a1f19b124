package store_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// A `q` search answers the same rows in the same order, and the same total, whichever route ListAlerts
// takes: every match read whole (alertSearchFew, at most its cap), the window walk (common words) or
// the index route (words rarer than a page in the first 2 000 alerts, or past the window), on every
// page and in both directions.
func TestListAlertsQueryRoutesAgree(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	source := "qroutes-" + uuid.NewString()[:8]
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 2600
	type row struct {
		id    uuid.UUID
		title string
		at    time.Time
	}
	rows := make([]row, n)
	for i := range rows {
		title := fmt.Sprintf("Common Beacon %d", i)
		var desc *string
		switch {
		case i < 30: // the oldest: past the window of the newest 2 000
			title = fmt.Sprintf("Rare Needle %d", i)
		case i%500 == 7: // a few in the window, fewer than a page
			d := "seen with the RARE needle tool"
			desc = &d
		}
		// Two alerts share each instant, so the uuid decides their order.
		rows[i] = row{id: uuid.New(), title: title, at: base.Add(time.Duration(i/2) * time.Second)}
		_, err := st.DB().ExecContext(ctx, `INSERT INTO alerts (uuid, title, description, severity, source_name, occurred_at)
			VALUES (?, ?, ?, 'Low', ?, ?)`, rows[i].id, title, desc, source, rows[i].at)
		require.NoError(t, err)
	}
	matching := func(text string) []row {
		var out []row
		for i, r := range rows {
			if strings.Contains(strings.ToLower(r.title), text) || (i >= 30 && i%500 == 7 && strings.Contains("seen with the rare needle tool", text)) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, tc := range []struct {
		text string
		desc bool
	}{{"needle", true}, {"needle", false}, {"beacon", true}, {"beacon", false}, {"nothing-like-it", true}, {`o'brien ?%_\ $1`, false}} {
		want := matching(tc.text)
		sort.Slice(want, func(i, j int) bool {
			a, b := want[i], want[j]
			if !a.at.Equal(b.at) {
				return a.at.Before(b.at) != tc.desc
			}
			return (a.id.String() < b.id.String()) != tc.desc
		})
		// A cap past any estimate reads every search here whole (alertSearchFew); a cap of 10 hands
		// each search with more matches to the window walk and the index route, with an exact count.
		for _, cap := range []int64{1 << 40, 10} {
			lister := store.WithSearchCap(st, cap)
			for page := 1; page <= 3; page++ {
				got, total, err := lister.ListAlerts(ctx, store.AlertFilter{
					SourceNames: []string{source}, Query: strings.ToUpper(tc.text), SortDesc: tc.desc,
					Page: store.Page{Number: page, Size: 20},
				})
				require.NoError(t, err)
				require.Equal(t, len(want), total, "%s total cap %d", tc.text, cap)
				lo, hi := min((page-1)*20, len(want)), min(page*20, len(want))
				wantIDs, gotIDs := make([]uuid.UUID, 0, hi-lo), make([]uuid.UUID, 0, len(got))
				for _, r := range want[lo:hi] {
					wantIDs = append(wantIDs, r.id)
				}
				for _, a := range got {
					gotIDs = append(gotIDs, a.UUID)
				}
				require.Equal(t, wantIDs, gotIDs, "q=%s desc=%v page %d cap %d", tc.text, tc.desc, page, cap)
			}
		}
	}
}
