package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testStore is the package's own fresh, migrated database (testenv.Store); tests share it: give
// rows unique keys.
func testStore(t testing.TB) *store.Store { return testenv.Store(t) }

func anyKey(string) bool { return true }

var actor = store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_ing1"}

func TestSource_ChecksInOrder(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	key := make([]byte, 32)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := ingest.New(st, sources.NewRegistry(), box, time.Hour)

	_, err = svc.Source(ctx, "nope", func(string) bool { t.Fatal("allowed checked before known"); return false })
	require.ErrorIs(t, err, ingest.ErrUnknownSource)
	_, err = svc.Source(ctx, "generic", func(s string) bool { return s != "generic" })
	require.ErrorIs(t, err, ingest.ErrSourceNotAllowed)

	// An inactive integration.
	require.NoError(t, st.CreateSourceIntegration(ctx, &store.SourceIntegration{SourceName: "splunk", DisplayName: "Splunk",
		IsActive: false, AuthType: sources.AuthNone}))
	_, err = svc.Source(ctx, "splunk", anyKey)
	require.ErrorIs(t, err, ingest.ErrSourceDisabled)

	// A shared-token integration: the signature is checked against the opened secret.
	sealed, err := box.SealJSON(ingest.Secret{Secret: "s3cret"})
	require.NoError(t, err)
	require.NoError(t, st.CreateSourceIntegration(ctx, &store.SourceIntegration{SourceName: "elastic", DisplayName: "Elastic",
		IsActive: true, AuthType: sources.AuthSharedToken, AuthConfig: sealed}))
	src, err := svc.Source(ctx, "elastic", anyKey)
	require.NoError(t, err)
	headers := func(v string) func(string) string {
		return func(h string) string {
			if h == "X-Elastic-Signature" {
				return v
			}
			return ""
		}
	}
	require.NoError(t, src.VerifySignature(headers("s3cret"), []byte(`{}`)))
	for _, bad := range []string{"", "wrong", strings.Repeat("s", 100_000), "s3cret\x00"} {
		require.ErrorIs(t, src.VerifySignature(headers(bad), []byte(`{}`)), ingest.ErrInvalidSignature, "%q", bad)
	}
	// Without an integration nothing is signed.
	gen, err := svc.Source(ctx, "generic", anyKey)
	require.NoError(t, err)
	require.NoError(t, gen.VerifySignature(headers(""), []byte(`{}`)))

	// A secret but no key to open it is an error, not an open door.
	noBox := ingest.New(st, sources.NewRegistry(), nil, time.Hour)
	_, err = noBox.Source(ctx, "elastic", anyKey)
	require.Error(t, err)
	require.NotErrorIs(t, err, ingest.ErrInvalidSignature)
}

func TestDecode_HostileAndMalformed(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		loc  string // "" for ErrInvalidJSON
	}{
		{"array", `[1,2]`, "()"},
		{"string", `"x"`, "()"},
		{"null", `null`, "()"},
		{"number too large", `{"a": 1e400}`, ""},
		{"NUL in value", `{"a": {"b": ["ok", "x\u0000y"]}}`, "a.b[1]"},
		{"NUL in key", `{"a\u0000": 1}`, "a\x00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ingest.Decode([]byte(tc.raw))
			if tc.loc == "" {
				require.ErrorIs(t, err, ingest.ErrInvalidJSON)
				return
			}
			var perr *ingest.PayloadError
			require.True(t, errors.As(err, &perr), "%v", err)
			require.Len(t, perr.Detail, 1)
			if tc.loc == "()" {
				require.Empty(t, perr.Detail[0].Loc)
			} else {
				require.Equal(t, tc.loc, validate.LocString(perr.Detail[0].Loc))
			}
		})
	}
	p, err := ingest.Decode([]byte(`{"title": "x"}`))
	require.NoError(t, err)
	require.Equal(t, "x", p["title"])
}

func TestIngest_CommitsNormalizesAndFingerprints(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := ingest.New(st, sources.NewRegistry(), nil, time.Hour)
	src, err := svc.Source(ctx, "generic", anyKey)
	require.NoError(t, err)

	// No shape is refused (API.md §2): an object without a title is an alert with a noted fallback.
	untitled := uuid.NewString()
	res, err := svc.Ingest(ctx, src, []byte(`{"severity": "High", "description": "`+untitled+`\nmore"}`), actor)
	require.NoError(t, err)
	got, err := st.GetAlert(ctx, res.AlertUUID)
	require.NoError(t, err)
	require.Equal(t, untitled, got.Title)
	require.Equal(t, []store.Note{
		{Field: "title", Note: "no title key of the source; first line of the description used"},
		{Field: "occurred_at", Note: "no timestamp in the payload; ingested_at used"},
	}, got.Normalized.NormalizationNotes)

	// A number float64 cannot hold does not cost the alert (R4-12): kept as text, the body as received
	// in original_body, noted.
	wildTitle := "wild " + uuid.NewString()
	wildBody := []byte(`{"title": "` + wildTitle + `", "n": 1e309, "deep": [{"m": -1e-20000}], "ok": 2.5}`)
	res, err = svc.Ingest(ctx, src, wildBody, actor)
	require.NoError(t, err)
	got, err = st.GetAlert(ctx, res.AlertUUID)
	require.NoError(t, err)
	require.Equal(t, wildTitle, got.Title)
	require.Equal(t, "1e309", got.RawPayload["n"])
	require.Equal(t, []any{map[string]any{"m": "-1e-20000"}}, got.RawPayload["deep"])
	require.Equal(t, 2.5, got.RawPayload["ok"])
	require.Equal(t, wildBody, got.OriginalBody)
	require.True(t, got.InputSanitized)
	require.Contains(t, got.Normalized.NormalizationNotes, store.Note{Field: "raw_payload",
		Note: "2 number(s) outside the range Vigil stores as numbers kept as text; original_body has the body as received"})

	title := "ingest " + uuid.NewString()
	raw := []byte(`{"title": "` + title + `", "severity": "high", "src_ip": "10.1.2.3"}`)
	first, err := svc.Ingest(ctx, src, raw, actor)
	require.NoError(t, err)
	require.False(t, first.Duplicate)
	require.Equal(t, "alert-"+first.AlertUUID.String(), first.WorkflowID)
	a, err := st.GetAlert(ctx, first.AlertUUID)
	require.NoError(t, err)
	require.Equal(t, "High", a.Severity)
	require.Equal(t, title, a.Title)
	require.NotNil(t, a.Fingerprint)

	// The same alert again within the window is a duplicate of the first.
	again, err := svc.Ingest(ctx, src, raw, actor)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.AlertUUID, again.AlertUUID)
	require.Equal(t, first.WorkflowID, again.WorkflowID)

	// The fingerprint is the one Fingerprint computes from passes 1-2; a raw_payload mapping (pass 3),
	// visible once the cache is invalidated (writes through the API do that), never takes part in it.
	payload := map[string]any{"title": title, "src_ip": "10.1.2.3", "custom": map[string]any{"host": "evil.example"}}
	n := ingest.Normalize(src, payload)
	before := ingest.Fingerprint(n, "generic", indicators.Extract(n.Fields, nil, "generic", n.Indicators, nil), payload)
	require.Equal(t, *a.Fingerprint, before)
	require.NoError(t, st.CreateIndicatorMapping(ctx, &store.IndicatorMapping{FieldPath: "custom.host", IndicatorType: "domain",
		ExtractionTarget: "raw_payload", IsActive: true}))
	svc.Invalidate()
	mappings, err := svc.Mappings(ctx, "generic")
	require.NoError(t, err)
	require.NotEmpty(t, mappings)
	third, err := svc.Ingest(ctx, src, []byte(`{"title": "`+title+`", "severity": "high", "src_ip": "10.1.2.3", "custom": {"host": "evil.example"}}`), actor)
	require.NoError(t, err)
	require.True(t, third.Duplicate, "pass 3 does not change the fingerprint")

	// Alerts that name nothing (untitled, no pass-1/2 indicator) are told apart by their payload: two
	// different ones are two alerts, the same one again is a duplicate.
	untitledA := []byte(`{"message": "session closed for user root ` + title + `"}`)
	untitledB := []byte(`{"message": "session opened for user root ` + title + `"}`)
	ua, err := svc.Ingest(ctx, src, untitledA, actor)
	require.NoError(t, err)
	ub, err := svc.Ingest(ctx, src, untitledB, actor)
	require.NoError(t, err)
	require.False(t, ub.Duplicate, "a different untitled alert is not a repeat")
	require.NotEqual(t, ua.AlertUUID, ub.AlertUUID)
	ua2, err := svc.Ingest(ctx, src, untitledA, actor)
	require.NoError(t, err)
	require.True(t, ua2.Duplicate, "the same untitled alert again is")
	require.Equal(t, ua.AlertUUID, ua2.AlertUUID)

	// The actor is on the created event.
	evs, _, err := st.ListActivity(ctx, store.ActivityFilter{AlertUUID: &first.AlertUUID, Page: store.Page{Number: 1, Size: 50}})
	require.NoError(t, err)
	var created bool
	for _, e := range evs {
		if e.EventType == "alert_created" {
			created = true
			require.Equal(t, store.ActorAPI, e.ActorType)
			require.Equal(t, "cai_ing1", *e.ActorKeyPrefix)
		}
	}
	require.True(t, created)
}
