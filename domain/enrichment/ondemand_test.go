package enrichment_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// enricherFunc is an Enricher answering with a function (the real one runs Temporal workflows).
type enricherFunc func(ctx context.Context, typ, value string) ([]enrichment.Answer, error)

func (f enricherFunc) Enrich(ctx context.Context, typ, value string) ([]enrichment.Answer, error) {
	return f(ctx, typ, value)
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 23, 7, 0, 0, 0, time.FixedZone("x", 7200)) }

func TestOnDemand_RejectsInvalidInput(t *testing.T) {
	called := false
	en := enricherFunc(func(context.Context, string, string) ([]enrichment.Answer, error) {
		called = true
		return nil, nil
	})
	cases := []struct {
		name, typ, value, loc string
	}{
		{"unknown type", "ipv4", "1.2.3.4", "type"},
		{"empty type", "", "1.2.3.4", "type"},
		{"hostile type", "ip'; DROP TABLE alerts;--", "1.2.3.4", "type"},
		{"bad ip", "ip", "999.1.1.1", "value"},
		{"empty value", "domain", "   ", "value"},
		{"oversized domain", "domain", strings.Repeat("a", 300) + ".example", "value"},
		{"bad hash", "hash_md5", "zz" + strings.Repeat("0", 30), "value"},
		{"control characters", "email", "a\x00@b.example", "value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := enrichment.OnDemand(context.Background(), en, fixedNow, tc.typ, tc.value)
			var errs validate.Errors
			require.ErrorAs(t, err, &errs)
			require.Len(t, errs, 1)
			require.Equal(t, []any{tc.loc}, errs[0].Loc)
			if tc.loc == "type" {
				require.Equal(t, validate.TypeEnum, errs[0].Type)
				require.Equal(t, tc.typ, errs[0].Input)
				require.Equal(t, "ip,domain,hash_md5,hash_sha1,hash_sha256,url,email,account", errs[0].Ctx["expected"])
			} else {
				require.Equal(t, validate.TypeValue, errs[0].Type)
				require.Equal(t, tc.value, errs[0].Input, "the input as given; callers cut it")
			}
		})
	}
	require.False(t, called, "nothing invalid reaches the providers")
}

func TestOnDemand_NormalizesAndAggregates(t *testing.T) {
	at := time.Date(2026, 11, 23, 6, 0, 0, 0, time.FixedZone("y", -3600))
	var gotType, gotValue string
	en := enricherFunc(func(_ context.Context, typ, value string) ([]enrichment.Answer, error) {
		gotType, gotValue = typ, value
		return []enrichment.Answer{
			{Provider: "a", Status: store.EnrichSuccess, Success: true, Malice: "Suspicious", Extracted: map[string]any{"n": 1.0}, EnrichedAt: &at, CacheHit: true},
			{Provider: "b", Status: store.EnrichSuccess, Success: true, Malice: "Benign"},
			{Provider: "c", Status: store.EnrichFailed, Success: false, Malice: "Malicious", ErrorMessage: "HTTP 500"},
			{Provider: "d", Status: store.EnrichSuccess, Success: true},
		}, nil
	})
	res, err := enrichment.OnDemand(context.Background(), en, fixedNow, "domain", "  Evil.EXAMPLE.com. ")
	require.NoError(t, err)
	require.Equal(t, "domain", gotType)
	require.Equal(t, "evil.example.com", gotValue, "providers get the normalized value")
	require.Equal(t, indicators.TypeDomain, res.Type)
	require.Equal(t, "evil.example.com", res.Value)
	require.Equal(t, "Suspicious", res.Malice, "worst over the successful providers only")
	require.Equal(t, fixedNow().UTC(), res.EnrichedAt)
	require.Equal(t, time.UTC, res.EnrichedAt.Location())
	require.Len(t, res.Results, 4)
	a := res.Results["a"]
	require.True(t, a.CacheHit)
	require.Equal(t, map[string]any{"n": 1.0}, a.Extracted)
	require.Equal(t, time.UTC, a.EnrichedAt.Location())
	require.True(t, at.Equal(*a.EnrichedAt))
	require.Equal(t, "Malicious", res.Results["c"].Malice)
	require.Equal(t, "HTTP 500", res.Results["c"].ErrorMessage)
	require.Equal(t, "Pending", res.Results["d"].Malice, "no verdict is Pending")
	require.Equal(t, map[string]any{}, res.Results["d"].Extracted)
	require.Nil(t, res.Results["d"].EnrichedAt)

	none := enricherFunc(func(context.Context, string, string) ([]enrichment.Answer, error) { return nil, nil })
	res, err = enrichment.OnDemand(context.Background(), none, fixedNow, "ip", "::ffff:10.0.0.1")
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1", res.Value)
	require.Equal(t, "Pending", res.Malice, "no provider: Pending")
	require.NotNil(t, res.Results)
	require.Empty(t, res.Results)
}

func TestOnDemand_Unavailable(t *testing.T) {
	_, err := enrichment.OnDemand(context.Background(), nil, fixedNow, "ip", "1.2.3.4")
	require.ErrorIs(t, err, enrichment.ErrUnavailable)

	boom := errors.New("temporal unreachable")
	en := enricherFunc(func(context.Context, string, string) ([]enrichment.Answer, error) { return nil, boom })
	_, err = enrichment.OnDemand(context.Background(), en, fixedNow, "ip", "1.2.3.4")
	require.ErrorIs(t, err, enrichment.ErrUnavailable)
	require.ErrorIs(t, err, boom)
	var errs validate.Errors
	require.False(t, errors.As(err, &errs))
}
