package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

func TestLinkExtractionRecordsExtractedByAndNotesOnce(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	id := newAlert(t, st)

	keys := []store.IndicatorKey{{Type: "ip", Value: "198.51.100.77"}, {Type: "domain", Value: "x-" + id.String()[:8] + ".example.com"}}
	by := [][]indicators.Origin{{{Pass: 1, FieldPath: ""}, {Pass: 4, FieldPath: "Entities.3.Address"}}, nil}
	note := store.Note{Field: "indicators", Note: "612 indicators found; the first 500 in pass order are linked"}
	l, err := st.LinkExtraction(ctx, id, store.ExtractionLinks{Keys: keys, ExtractedBy: by, Notes: []store.Note{note}}, "extraction", "generic", nil)
	require.NoError(t, err)
	require.Equal(t, 2, l.NewLinks)

	// A re-run with other origins rewrites no link and adds the note once.
	other := [][]indicators.Origin{{{Pass: 3, FieldPath: "x"}}, {{Pass: 4, FieldPath: "y"}}}
	l, err = st.LinkExtraction(ctx, id, store.ExtractionLinks{Keys: keys, ExtractedBy: other, Notes: []store.Note{note}}, "extraction", "generic", nil)
	require.NoError(t, err)
	require.Zero(t, l.NewLinks)

	inds, err := st.AlertIndicators(ctx, id)
	require.NoError(t, err)
	require.Len(t, inds, 2)
	got := map[string][]indicators.Origin{}
	for _, ind := range inds {
		got[ind.Type] = ind.ExtractedBy
	}
	require.Equal(t, by[0], got["ip"])
	require.Nil(t, got["domain"], "no origins: NULL, as for links made before")

	var notes string
	require.NoError(t, st.DB().NewRaw(`SELECT (normalized->'normalization_notes')::text FROM alerts WHERE uuid = ?`, id).Scan(ctx, &notes))
	var list []store.Note
	require.NoError(t, json.Unmarshal([]byte(notes), &list))
	require.Equal(t, []store.Note{note}, list)

	// Another note on the same field (the scan's, or the plugin's own at ingest) stands beside it.
	scan := store.Note{Field: "indicators", Note: "pass 4 scanned part of the payload: more than 20000 strings"}
	_, err = st.LinkExtraction(ctx, id, store.ExtractionLinks{Keys: keys, Notes: []store.Note{note, scan}}, "extraction", "generic", nil)
	require.NoError(t, err)
	require.NoError(t, st.DB().NewRaw(`SELECT (normalized->'normalization_notes')::text FROM alerts WHERE uuid = ?`, id).Scan(ctx, &notes))
	list = nil
	require.NoError(t, json.Unmarshal([]byte(notes), &list))
	require.Equal(t, []store.Note{note, scan}, list)

	// The notes are in normalized, where the alert detail reads them.
	var fields string
	require.NoError(t, st.DB().NewRaw(`SELECT normalized::text FROM alerts WHERE uuid = ?`, id).Scan(ctx, &fields))
	require.Contains(t, fields, "normalization_notes")
}

func TestExtractionExclusionsSeededOnce(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	before, err := st.ExtractionExclusions(ctx)
	require.NoError(t, err)
	require.NoError(t, st.SeedExclusions(ctx, []string{"seed.example.com"}))
	x, err := st.ExtractionExclusions(ctx)
	require.NoError(t, err)
	if before.UpdatedAt.IsZero() {
		require.Equal(t, []string{"seed.example.com"}, x.Entries)
	}
	_, err = st.PutExtractionExclusions(ctx, []string{"mine.example.com"})
	require.NoError(t, err)
	require.NoError(t, st.SeedExclusions(ctx, []string{"seed.example.com"}))
	x, err = st.ExtractionExclusions(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"mine.example.com"}, x.Entries, "an admin's list is never reseeded")
	ex, err := st.Exclusions(ctx)
	require.NoError(t, err)
	require.True(t, ex.Excludes(indicators.Indicator{Type: indicators.TypeDomain, Value: "mine.example.com"}))
}
