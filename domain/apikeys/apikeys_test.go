package apikeys_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// invalidations records the keys the service dropped from the authenticator's cache.
type invalidations []uuid.UUID

func (i *invalidations) Invalidate(id uuid.UUID) { *i = append(*i, id) }

// events are the audit events written by the actor with key prefix, oldest first.
func events(t *testing.T, st *store.Store, prefix string) []store.AuditEvent {
	t.Helper()
	rows, _, err := st.ListAuditEvents(context.Background(), store.AuditFilter{ActorKeyPrefix: prefix, Page: store.Page{Number: 1, Size: 100}})
	require.NoError(t, err)
	out := make([]store.AuditEvent, len(rows))
	for i, e := range rows {
		out[len(rows)-1-i] = e
	}
	return out
}

// TestServiceAnyDoor: the key rules and their audit events hold whichever door calls (here an MCP
// actor, no HTTP): defaults, scopes normalised, one event per change, none for a refused or empty
// change, revocation final, the cache told after each write.
func TestServiceAnyDoor(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	var cache invalidations
	svc := apikeys.New(st, st, &cache)
	prefix := "cai_" + uuid.NewString()[:8]
	actor := store.Actor{Type: store.ActorMCP, KeyPrefix: prefix, KeyName: "door-test"}

	past := time.Now().Add(-time.Hour)
	_, _, err := svc.Create(ctx, actor, apikeys.Fields{Name: "expired", Scopes: []string{auth.ScopeAdmin}, ExpiresAt: &past})
	var verrs validate.Errors
	require.ErrorAs(t, err, &verrs)
	require.Equal(t, []any{"expires_at"}, verrs[0].Loc)
	require.Empty(t, events(t, st, prefix), "a refused key records nothing")

	k, plain, err := svc.Create(ctx, actor, apikeys.Fields{Name: "door " + prefix,
		Scopes: []string{auth.ScopeAlertsWrite, auth.ScopeAlertsRead, auth.ScopeAlertsWrite}})
	require.NoError(t, err)
	require.Equal(t, auth.KeyTypeHuman, k.KeyType)
	require.Equal(t, []string{auth.ScopeAlertsRead, auth.ScopeAlertsWrite}, k.Scopes)
	require.Equal(t, auth.Hash(plain), k.KeyHash)
	require.Equal(t, auth.Prefix(plain), k.KeyPrefix)
	stored, err := st.GetAPIKey(ctx, k.UUID)
	require.NoError(t, err)
	require.True(t, stored.IsActive)

	same, err := svc.Update(ctx, actor, k.UUID, apikeys.Patch{})
	require.NoError(t, err)
	require.Equal(t, k.Name, same.Name)

	limit := 7
	k, err = svc.Update(ctx, actor, k.UUID, apikeys.Patch{RateLimitPerMinute: optional.Of(limit),
		AllowedSources: optional.Value[[]string]{Set: true, Null: true}})
	require.NoError(t, err)
	require.Equal(t, &limit, k.RateLimitPerMinute)

	require.NoError(t, svc.Revoke(ctx, actor, k.UUID))
	require.NoError(t, svc.Revoke(ctx, actor, k.UUID), "revoking twice is no error")
	active := true
	_, err = svc.Update(ctx, actor, k.UUID, apikeys.Patch{IsActive: &active})
	require.ErrorIs(t, err, apikeys.ErrRevoked)
	_, err = svc.Update(ctx, actor, uuid.New(), apikeys.Patch{IsActive: &active})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, svc.Revoke(ctx, actor, uuid.New()), store.ErrNotFound)

	got := events(t, st, prefix)
	require.Len(t, got, 3, "created, updated, revoked: nothing for the empty patch, the second revoke or the refusals")
	for i, action := range []string{store.AuditCreated, store.AuditUpdated, store.AuditRevoked} {
		require.Equal(t, action, got[i].Action)
		require.Equal(t, audit.APIKey, got[i].ResourceType)
		require.Equal(t, store.ActorMCP, got[i].ActorType)
		require.Equal(t, k.UUID, *got[i].ResourceUUID)
	}
	require.Contains(t, got[1].Changes, "rate_limit_per_minute")
	require.Equal(t, "[redacted]", got[0].Changes["key_hash"].To, "the hash never appears in clear")
	require.Equal(t, []uuid.UUID{k.UUID, k.UUID, k.UUID}, []uuid.UUID(cache), "update, revoke, and the no-op revoke")
}

// TestServiceCommandLine: the command line's service has no cache to tell and records as system.
func TestServiceCommandLine(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	svc := apikeys.New(st, st, nil)
	k, _, err := svc.Create(ctx, store.Actor{Type: store.ActorSystem}, apikeys.Fields{Name: "cli " + uuid.NewString(),
		Scopes: []string{auth.ScopeAdmin}, KeyType: auth.KeyTypeAgent})
	require.NoError(t, err)
	require.Equal(t, auth.KeyTypeAgent, k.KeyType)
	require.NoError(t, svc.Revoke(ctx, store.Actor{Type: store.ActorSystem}, k.UUID))
	rows, _, err := st.ListAuditEvents(ctx, store.AuditFilter{ResourceTypes: []string{audit.APIKey}, Page: store.Page{Number: 1, Size: 100}})
	require.NoError(t, err)
	var mine []string
	for _, e := range rows {
		if e.ResourceUUID != nil && *e.ResourceUUID == k.UUID {
			require.Equal(t, store.ActorSystem, e.ActorType)
			mine = append(mine, e.Action)
		}
	}
	require.ElementsMatch(t, []string{store.AuditCreated, store.AuditRevoked}, mine)
}
