package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/store"
)

type model struct {
	bun.BaseModel `bun:"table:models"`

	UUID         uuid.UUID       `bun:"uuid,pk,type:uuid"`
	Name         string          `bun:"name"`
	Tags         []string        `bun:"tags,array"`
	Limit        *int            `bun:"limit"`
	Active       bool            `bun:"active"`
	Steps        json.RawMessage `bun:"steps,type:jsonb"`
	Sealed       []byte          `bun:"sealed"`      // a sealed value: []byte is a secret by type
	Secret       string          `bun:"secret"`      // a secret by name
	Password     string          `bun:"password"`    // so is this one
	Runbook      string          `bun:"-"`           // not a column
	Parent       *model          `bun:"rel:has-one"` // a relation, not a column
	CreatedAt    time.Time       `bun:"created_at"`
	UpdatedAt    time.Time       `bun:"updated_at"`
	Untagged     string
	LastUsedAt   *time.Time `bun:"last_used_at"`
	AuthConfig   []byte     `bun:"auth_config"`
	HeaderValues string     `bun:"auth_header_value"`
}

func TestDiffListsChangedColumnsAndRedactsSecrets(t *testing.T) {
	n := 5
	before := model{UUID: uuid.New(), Name: "a", Tags: []string{"x"}, Active: true, Steps: json.RawMessage(`{"a":1}`),
		Sealed: []byte{1, 2, 3}, Secret: "old-secret", Password: "p1", CreatedAt: time.Now(), HeaderValues: "h1"}
	after := before
	after.Name, after.Tags, after.Limit, after.Active = "b", []string{"x", "y"}, &n, false
	after.Steps = json.RawMessage(`{"a":2}`)
	after.Sealed, after.Secret, after.Password = []byte{4, 5, 6}, "new-secret", "p1"
	after.UpdatedAt, after.Runbook, after.Untagged = time.Now(), "changed", "changed"
	after.HeaderValues = ""

	got := audit.Diff(before, &after)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"name": {"from": "a", "to": "b"},
		"tags": {"from": ["x"], "to": ["x","y"]},
		"limit": {"from": null, "to": 5},
		"active": {"from": true, "to": false},
		"steps": {"from": {"a":1}, "to": {"a":2}},
		"sealed": {"from": "[redacted]", "to": "[redacted]"},
		"secret": {"from": "[redacted]", "to": "[redacted]"},
		"auth_header_value": {"from": "[redacted]", "to": null}
	}`, string(raw), "password did not change; uuid, timestamps, untagged fields, relations and bun:\"-\" never appear")
	require.NotContains(t, string(raw), "old-secret")
	require.NotContains(t, string(raw), "new-secret")
}

func TestDiffOfCreatedAndDeletedListsOnlyValues(t *testing.T) {
	m := model{UUID: uuid.New(), Name: "new", Secret: "s", AuthConfig: []byte("sealed"), CreatedAt: time.Now()}
	created := audit.Diff(nil, m)
	require.Equal(t, map[string]store.AuditChange{
		"name":        {From: nil, To: json.RawMessage(`"new"`)},
		"secret":      {From: nil, To: store.AuditRedacted},
		"auth_config": {From: nil, To: store.AuditRedacted},
	}, created)
	deleted := audit.Diff(&m, (*model)(nil))
	require.Len(t, deleted, 3)
	require.Equal(t, store.AuditRedacted, deleted["secret"].From)
	require.Nil(t, deleted["secret"].To)

	only := audit.Diff(nil, m, "name", "auth_config")
	require.Len(t, only, 2)
	require.Contains(t, only, "auth_config")
	require.Empty(t, audit.Diff(m, m), "no change, no fields")
	require.Empty(t, audit.Diff("not a model", 42))
}

func TestEventOfAnUpdateThatChangedNothingIsNone(t *testing.T) {
	m := model{Name: "same"}
	actor := store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_abcd", KeyName: "k", RequestID: "r-1", ClientIP: "192.0.2.1"}
	require.Nil(t, audit.Event(actor, store.AuditUpdated, audit.Subject{Type: audit.Agent, Before: m, After: m}))
	e := audit.Event(actor, store.AuditDeleted, audit.Subject{Type: audit.Agent, UUID: uuid.New(), Name: "same", Before: m})
	require.NotNil(t, e)
	require.Equal(t, "cai_abcd", *e.ActorKeyPrefix)
	require.Equal(t, "k", *e.ActorKeyName)
	require.Equal(t, "r-1", *e.RequestID)
	require.Equal(t, "192.0.2.1", *e.ClientIP)
	require.NotNil(t, e.ResourceUUID)
	e = audit.Event(actor, store.AuditUpdated, audit.Subject{Action: store.AuditCreated, Type: audit.WorkflowSecret, Name: "X", After: m})
	require.Equal(t, store.AuditCreated, e.Action, "the subject's action wins (an upsert)")
	require.Nil(t, e.ResourceUUID)
}
