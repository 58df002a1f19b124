package mcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// actorSpy is the real alert service, noting the actor each change is made as.
type actorSpy struct {
	*alerts.Service
	mu     sync.Mutex
	actors []store.Actor
}

func (s *actorSpy) Patch(ctx context.Context, id uuid.UUID, p alerts.Patch, actor store.Actor) (store.Alert, error) {
	s.mu.Lock()
	s.actors = append(s.actors, actor)
	s.mu.Unlock()
	return s.Service.Patch(ctx, id, p, actor)
}

type requestIDTransport struct{ token, id string }

func (b requestIDTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	r.Header.Set("X-Request-ID", b.id)
	return http.DefaultTransport.RoundTrip(r)
}

// TestWriteToolsActAsTheCallingRequest: over streamable HTTP a write tool acts as the key (type mcp,
// prefix, name) from the request's client address, with the server's id of the request and its
// X-Request-ID beside it, as REST and the console do, so what the rule owners record names the request.
func TestWriteToolsActAsTheCallingRequest(t *testing.T) {
	spy := &actorSpy{}
	h := newHarness(t, 1000, func(c *Config) {
		spy.Service = alerts.New(c.Alerts.(*store.Store), slog.New(slog.NewTextHandler(io.Discard, nil)))
		c.AlertService = spy
	})
	base := serveOn(t, h)
	token, k := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	id := h.alert(t, "MCP actor "+uuid.NewString())
	reqID := "mcp-req-" + uuid.NewString()[:8]
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: requestIDTransport{token: token, id: reqID}}}, nil)
	require.NoError(t, err)
	defer cs.Close()

	res, body := call(t, cs, "update_alert_status", map[string]any{"alert_uuid": id.String(), "status": "Triaging"})
	require.False(t, res.IsError, "%v", body)
	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.Len(t, spy.actors, 1)
	got := spy.actors[0]
	// The request's id is the server's; the client's X-Request-ID is kept beside it (round 4, R4-10).
	require.Regexp(t, `^[0-9a-f-]{36}$`, got.RequestID)
	got.RequestID = ""
	require.Equal(t, store.Actor{Type: store.ActorMCP, KeyPrefix: k.KeyPrefix, KeyName: k.Name, ClientRequestID: reqID, ClientIP: "127.0.0.1"}, got)
}
