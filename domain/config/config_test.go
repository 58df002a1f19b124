package config_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// invalidations counts the times ingestion's cache was dropped.
type invalidations int

func (i *invalidations) Invalidate() { *i++ }

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

func actor() store.Actor {
	return store.Actor{Type: store.ActorConsole, KeyPrefix: "cai_" + uuid.NewString()[:8], KeyName: "console-door"}
}

// TestRulesAnyDoor: a detection rule's defaults and audit events come from the service, whichever
// door calls (a console actor here): created_by is the actor's key prefix, lists lose repeats, a
// missing rule records nothing.
func TestRulesAnyDoor(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	svc := config.NewRules(st, st)
	a := actor()
	r, err := svc.Create(ctx, a, config.RuleFields{Name: "rule " + a.KeyPrefix, MitreTactics: []string{"TA0001", "TA0001", "TA0002"}})
	require.NoError(t, err)
	require.True(t, r.IsActive)
	require.Equal(t, a.KeyPrefix, *r.CreatedBy)
	require.Equal(t, []string{"TA0001", "TA0002"}, r.MitreTactics)

	name := "renamed " + a.KeyPrefix
	_, err = svc.Update(ctx, a, r.UUID, config.RulePatch{Name: &name})
	require.NoError(t, err)
	_, err = svc.Update(ctx, a, r.UUID, config.RulePatch{})
	require.NoError(t, err)
	require.ErrorIs(t, svc.Delete(ctx, a, uuid.New()), store.ErrNotFound)
	require.NoError(t, svc.Delete(ctx, a, r.UUID))

	got := events(t, st, a.KeyPrefix)
	require.Len(t, got, 3)
	for i, action := range []string{store.AuditCreated, store.AuditUpdated, store.AuditDeleted} {
		require.Equal(t, action, got[i].Action)
		require.Equal(t, audit.DetectionRule, got[i].ResourceType)
		require.Equal(t, store.ActorConsole, got[i].ActorType)
	}
	require.Equal(t, store.AuditChange{From: "rule " + a.KeyPrefix, To: name}, got[1].Changes["name"])
}

// TestMappingsAnyDoor: the mapping rules (known source, system rows read-only, whole-mapping
// validation) refuse without an event or a cache drop; each write records one event and drops the
// cache once.
func TestMappingsAnyDoor(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	var cache invalidations
	svc := config.NewMappings(st, st, sources.NewRegistry(), &cache)
	a := actor()

	unknown := "no-such-source"
	_, err := svc.Create(ctx, a, config.MappingFields{SourceName: &unknown, FieldPath: "a.b", IndicatorType: "ip", ExtractionTarget: "normalized"})
	var verrs validate.Errors
	require.ErrorAs(t, err, &verrs)
	require.Equal(t, []any{"source_name"}, verrs[0].Loc)

	path := "door." + uuid.NewString()[:8]
	m, err := svc.Create(ctx, a, config.MappingFields{FieldPath: path, IndicatorType: "ip", ExtractionTarget: "normalized"})
	require.NoError(t, err)
	require.True(t, m.IsActive)
	_, err = svc.Create(ctx, a, config.MappingFields{FieldPath: path, IndicatorType: "ip", ExtractionTarget: "normalized"})
	require.ErrorIs(t, err, store.ErrConflict)

	bad := ""
	_, err = svc.Update(ctx, a, m.UUID, config.MappingPatch{FieldPath: &bad})
	require.ErrorAs(t, err, &verrs)
	off := false
	_, err = svc.Update(ctx, a, m.UUID, config.MappingPatch{IsActive: &off})
	require.NoError(t, err)

	sysPath := "system." + uuid.NewString()[:8]
	require.NoError(t, st.SeedSystemMappings(ctx, []store.IndicatorMapping{{FieldPath: sysPath, IndicatorType: "ip", ExtractionTarget: "normalized"}}))
	system, _, err := st.ListIndicatorMappings(ctx, store.IndicatorMappingFilter{IsSystem: &[]bool{true}[0], Page: store.Page{Number: 1, Size: 100}})
	require.NoError(t, err)
	require.NotEmpty(t, system)
	var sm *ingest.SystemMappingError
	require.ErrorAs(t, svc.Delete(ctx, a, system[0].UUID), &sm)
	_, err = svc.Update(ctx, a, system[0].UUID, config.MappingPatch{FieldPath: &path})
	require.ErrorAs(t, err, &sm)
	require.NoError(t, svc.Delete(ctx, a, m.UUID))

	got := events(t, st, a.KeyPrefix)
	require.Len(t, got, 3, "created, updated, deleted; nothing for the refusals")
	require.Equal(t, 3, int(cache))
}
