package responses_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

// TestChangesAreAuditedWhicheverDoorAsks: the rule owner writes the audit event, so a workflow or a
// workflow secret changed through any door (REST, MCP, console) is recorded alike, with that door's
// actor; a change the rules refuse records nothing.
func TestChangesAreAuditedWhicheverDoorAsks(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	for _, door := range []string{store.ActorAPI, store.ActorMCP, store.ActorConsole} {
		t.Run(door, func(t *testing.T) {
			who := actor(auth.KeyTypeHuman, auth.ScopeAdmin)
			who.Type, who.RequestID, who.ClientIP = door, "req-"+door, "198.51.100.7"
			events := func() []store.AuditEvent {
				evs, _, err := st.ListAuditEvents(ctx, store.AuditFilter{ActorKeyPrefix: who.KeyPrefix})
				require.NoError(t, err)
				return evs
			}

			w := draftWorkflow(`[{"name":"a","url":"https://x.example.com/"}]`)
			require.NoError(t, svc.CreateWorkflow(ctx, who, &w))
			desc := "now described"
			_, err := svc.UpdateWorkflow(ctx, who, w.UUID, func(d *store.WorkflowDefinition) { d.Description = &desc }, nil)
			require.NoError(t, err)
			name := secretName("AUD")
			_, err = svc.PutSecret(ctx, who, &store.WorkflowSecret{Name: name, ValueSealed: []byte("sealed"), AllowedHosts: []string{"x.example.com"}})
			require.NoError(t, err)
			require.NoError(t, svc.DeleteSecret(ctx, who, name))
			require.NoError(t, svc.DeleteWorkflow(ctx, who, w.UUID))

			// Refused by the rules: nothing recorded.
			require.Error(t, svc.DeleteSecret(ctx, who, name), "already gone")
			require.Error(t, svc.DeleteWorkflow(ctx, who, w.UUID), "already deleted")

			evs := events()
			require.Len(t, evs, 5)
			got := map[string]int{}
			for _, e := range evs {
				got[e.ResourceType+" "+e.Action]++
				require.Equal(t, door, e.ActorType)
				require.Equal(t, "test", *e.ActorKeyName)
				require.Equal(t, "req-"+door, *e.RequestID)
				require.Equal(t, "198.51.100.7", *e.ClientIP)
			}
			require.Equal(t, map[string]int{"workflow created": 1, "workflow updated": 1, "workflow deleted": 1,
				"workflow_secret created": 1, "workflow_secret deleted": 1}, got)
			for _, e := range evs {
				if e.ResourceType == audit.WorkflowSecret {
					require.Equal(t, store.AuditRedacted, firstNonNil(e.Changes["value_sealed"]))
					require.NotContains(t, e.Changes, "description")
				}
				if e.ResourceType == audit.Workflow && e.Action == store.AuditUpdated {
					require.Equal(t, desc, e.Changes["description"].To)
				}
			}
		})
	}
}

func firstNonNil(c store.AuditChange) any {
	if c.From != nil {
		return c.From
	}
	return c.To
}
