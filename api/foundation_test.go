package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/store"
)

func TestAuthentication(t *testing.T) {
	ts := newTestServer(t, nil)
	valid := mustKey(t, ts.Store, auth.ScopeAdmin)
	past := time.Now().Add(-time.Hour)
	expired := mustKeyWith(t, ts.Store, func(k *store.APIKey) { k.ExpiresAt = &past }, auth.ScopeAdmin)
	revoked := mustKeyWith(t, ts.Store, func(k *store.APIKey) { k.IsActive = false }, auth.ScopeAdmin)
	unknown, err := auth.NewKey()
	require.NoError(t, err)

	cases := []struct {
		name, header, code string
	}{
		{"missing", "", "UNAUTHORIZED"},
		{"not bearer", "Basic " + valid, "UNAUTHORIZED"},
		{"empty bearer", "Bearer ", "UNAUTHORIZED"},
		{"malformed", "Bearer not-a-key", "UNAUTHORIZED"},
		{"wrong prefix", "Bearer xyz_" + valid[4:], "UNAUTHORIZED"},
		{"too long", "Bearer " + valid + "x", "UNAUTHORIZED"},
		{"unknown", "Bearer " + unknown, "UNAUTHORIZED"},
		{"revoked", "Bearer " + revoked, "UNAUTHORIZED"},
		{"expired", "Bearer " + expired, "KEY_EXPIRED"},
		{"sql-ish", "Bearer cai_' OR 1=1 --aaaaaaaaaaaaaaaaaaaaa", "UNAUTHORIZED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.header != "" {
				h = []string{"Authorization", tc.header}
			}
			r := ts.do(t, http.MethodGet, "/v1/api-keys", "", nil, h...)
			requireError(t, r, http.StatusUnauthorized, tc.code)
			require.Equal(t, `Bearer realm="vigil"`, r.Header.Get("WWW-Authenticate"))
		})
	}
	t.Run("valid", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/api-keys", valid, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	})
	t.Run("lowercase scheme", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/api-keys", "", nil, "Authorization", "bearer "+valid)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	})
}

// TestEveryScopeRefusal walks the route table: a key without the route's scope gets 403 naming it.
func TestEveryScopeRefusal(t *testing.T) {
	ts := newTestServer(t, nil)
	checked := 0
	for _, r := range ts.Server.routes {
		if r.Public || len(r.Scopes) == 0 {
			continue
		}
		// A key holding every scope except the ones the route needs (and admin).
		var scopes []string
		for _, s := range auth.AllScopes() {
			if s != auth.ScopeAdmin && !containsString(r.Scopes, s) {
				scopes = append(scopes, s)
			}
		}
		key := mustKey(t, ts.Store, scopes...)
		path := strings.NewReplacer(":uuid", uuid.NewString(), ":source_name", "generic").Replace(r.Path)
		for strings.Contains(path, ":") {
			i := strings.Index(path, ":")
			j := strings.IndexByte(path[i:], '/')
			if j < 0 {
				j = len(path) - i
			}
			path = path[:i] + uuid.NewString() + path[i+j:]
		}
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			resp := ts.do(t, r.Method, path, key, `{}`)
			m := requireError(t, resp, http.StatusForbidden, "FORBIDDEN")
			details := m["error"].(map[string]any)["details"].(map[string]any)
			require.ElementsMatch(t, toAny(r.Scopes), details["required_scopes"])
		})
		checked++
	}
	require.Positive(t, checked)
}

// TestScopeRulesBeyondRouteScopes extends the matrix above with the rules a route's scope does not
// cover (issue 12): a live dry run needs admin, and agent keys cannot decide approval requests, even
// holding every other scope.
func TestScopeRulesBeyondRouteScopes(t *testing.T) {
	ts, _ := newWorkflowServer(t)
	var allButAdmin []string
	for _, s := range auth.AllScopes() {
		if s != auth.ScopeAdmin {
			allButAdmin = append(allButAdmin, s)
		}
	}
	human := mustKey(t, ts.Store, allButAdmin...)
	agent := mustKeyWith(t, ts.Store, func(k *store.APIKey) { k.KeyType = auth.KeyTypeAgent }, allButAdmin...)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	live := map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "live_http": true}
	test := "/v1/workflows/" + uuid.NewString() + "/test"
	for name, key := range map[string]string{"human": human, "agent": agent} {
		t.Run("live test as "+name, func(t *testing.T) {
			m := requireError(t, ts.do(t, http.MethodPost, test, key, live), http.StatusForbidden, "FORBIDDEN")
			require.Equal(t, []any{"admin"}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"])
		})
	}
	t.Run("live test as admin passes the rule", func(t *testing.T) {
		requireError(t, ts.do(t, http.MethodPost, test, admin, live), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("mock test needs only workflows:execute", func(t *testing.T) {
		requireError(t, ts.do(t, http.MethodPost, test, agent, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"}),
			http.StatusNotFound, "NOT_FOUND")
	})
	for _, verb := range []string{"approve", "reject"} {
		t.Run(verb+" as agent", func(t *testing.T) {
			requireError(t, ts.do(t, http.MethodPost, "/v1/workflow-approvals/"+uuid.NewString()+"/"+verb, agent, `{}`),
				http.StatusForbidden, "AGENT_CANNOT_APPROVE")
		})
		t.Run(verb+" as human passes the rule", func(t *testing.T) {
			requireError(t, ts.do(t, http.MethodPost, "/v1/workflow-approvals/"+uuid.NewString()+"/"+verb, human, `{}`),
				http.StatusNotFound, "NOT_FOUND")
		})
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestAPIKeyLifecycle(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)

	r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, map[string]any{
		"name": "siem", "scopes": []string{"alerts:write", "alerts:read"}, "key_type": "agent",
		"allowed_sources": []string{"splunk"}, "rate_limit_per_minute": 600})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	data := r.JSON(t)["data"].(map[string]any)
	plain := data["key"].(string)
	require.True(t, auth.WellFormed(plain), plain)
	require.Len(t, plain, 36)
	require.Equal(t, plain[:8], data["key_prefix"])
	require.Equal(t, "agent", data["key_type"])
	require.Equal(t, []any{"alerts:read", "alerts:write"}, data["scopes"])
	require.NotContains(t, string(r.Body), "hash")
	id := data["uuid"].(string)

	// Shown once: no later read carries the key.
	got := ts.do(t, http.MethodGet, "/v1/api-keys/"+id, admin, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.NotContains(t, string(got.Body), plain)
	require.NotContains(t, got.JSON(t)["data"], "key")
	list := ts.do(t, http.MethodGet, "/v1/api-keys?page_size=500", admin, nil)
	require.NotContains(t, string(list.Body), plain)
	require.NotContains(t, string(list.Body), plain[8:])

	// The new key works with its scopes and nothing more.
	require.Equal(t, http.StatusForbidden, ts.do(t, http.MethodGet, "/v1/api-keys", plain, nil).Status)

	// PATCH: explicit null clears allowed_sources; absent fields stay.
	p := ts.do(t, http.MethodPatch, "/v1/api-keys/"+id, admin, `{"allowed_sources": null, "name": "siem-2"}`)
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	pd := p.JSON(t)["data"].(map[string]any)
	require.Nil(t, pd["allowed_sources"])
	require.Equal(t, "siem-2", pd["name"])
	require.EqualValues(t, 600, pd["rate_limit_per_minute"])

	// Revoke: 204, the record stays, the key stops working at once.
	d := ts.do(t, http.MethodDelete, "/v1/api-keys/"+id, admin, nil)
	require.Equal(t, http.StatusNoContent, d.Status)
	after := ts.do(t, http.MethodGet, "/v1/api-keys/"+id, admin, nil)
	require.Equal(t, false, after.JSON(t)["data"].(map[string]any)["is_active"])
	requireError(t, ts.do(t, http.MethodGet, "/v1/api-keys", plain, nil), http.StatusUnauthorized, "UNAUTHORIZED")

	// Filters.
	inactive := ts.do(t, http.MethodGet, "/v1/api-keys?is_active=false", admin, nil)
	for _, k := range inactive.JSON(t)["data"].([]any) {
		require.Equal(t, false, k.(map[string]any)["is_active"])
	}

	requireError(t, ts.do(t, http.MethodGet, "/v1/api-keys/"+uuid.NewString(), admin, nil), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, ts.do(t, http.MethodGet, "/v1/api-keys/not-a-uuid", admin, nil))))
}

func TestAPIKeyValidation(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"every field wrong at once", `{"name": 5, "scopes": ["root"], "key_type": "robot", "expires_at": "2020-01-01", "allowed_sources": "x", "rate_limit_per_minute": 0}`,
			[]string{"body.name", "body.scopes.0", "body.key_type", "body.expires_at", "body.allowed_sources", "body.rate_limit_per_minute"}},
		{"missing", `{}`, []string{"body.name", "body.scopes"}},
		{"empty scopes", `{"name": "x", "scopes": []}`, []string{"body.scopes"}},
		{"unknown field", `{"name": "x", "scopes": ["admin"], "is_admin": true}`, []string{"body.is_admin"}},
		{"null name", `{"name": null, "scopes": ["admin"]}`, []string{"body.name"}},
		{"name too long", `{"name": "` + strings.Repeat("a", 201) + `", "scopes": ["admin"]}`, []string{"body.name"}},
		{"expired already", `{"name": "x", "scopes": ["admin"], "expires_at": "2020-01-01T00:00:00Z"}`, []string{"body.expires_at"}},
		{"array body", `[1,2]`, []string{"body"}},
		{"string body", `"hello"`, []string{"body"}},
		{"empty body", ``, []string{"body"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, tc.body)
			require.ElementsMatch(t, tc.want, locs(requireValidation(t, r)))
		})
	}
	t.Run("malformed json", func(t *testing.T) {
		requireError(t, ts.do(t, http.MethodPost, "/v1/api-keys", admin, `{"name": "x",`), http.StatusBadRequest, "INVALID_JSON")
	})
	t.Run("not json", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, strings.NewReader("name=x"), "Content-Type", "application/x-www-form-urlencoded")
		requireError(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	})
	t.Run("patch reset null rejected on non-nullable", func(t *testing.T) {
		id := ts.do(t, http.MethodGet, "/v1/api-keys?page_size=1", admin, nil).JSON(t)["data"].([]any)[0].(map[string]any)["uuid"].(string)
		r := ts.do(t, http.MethodPatch, "/v1/api-keys/"+id, admin, `{"scopes": [], "rate_limit_per_minute": "fast"}`)
		require.ElementsMatch(t, []string{"body.scopes", "body.rate_limit_per_minute"}, locs(requireValidation(t, r)))
	})
}

func TestPagination(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	for range 3 {
		mustKey(t, ts.Store, auth.ScopeAlertsRead)
	}
	r := ts.do(t, http.MethodGet, "/v1/api-keys?page=2&page_size=2", admin, nil)
	require.Equal(t, http.StatusOK, r.Status)
	meta := r.JSON(t)["meta"].(map[string]any)
	total := int(meta["total"].(float64))
	require.GreaterOrEqual(t, total, 4)
	require.EqualValues(t, 2, meta["page"])
	require.EqualValues(t, 2, meta["page_size"])
	require.EqualValues(t, (total+1)/2, meta["total_pages"])
	require.Len(t, r.JSON(t)["data"], 2)

	beyond := ts.do(t, http.MethodGet, "/v1/api-keys?page=1000", admin, nil)
	require.Equal(t, http.StatusOK, beyond.Status)
	require.Empty(t, beyond.JSON(t)["data"])

	for _, q := range []string{"page=0", "page=-1", "page_size=0", "page_size=501", "page=abc", "page_size=1.5", "is_active=maybe"} {
		t.Run(q, func(t *testing.T) {
			d := requireValidation(t, ts.do(t, http.MethodGet, "/v1/api-keys?"+q, admin, nil))
			require.Len(t, d, 1)
			require.Equal(t, "query", d[0]["loc"].([]any)[0])
		})
	}
	both := requireValidation(t, ts.do(t, http.MethodGet, "/v1/api-keys?page=0&page_size=9999", admin, nil))
	require.ElementsMatch(t, []string{"query.page", "query.page_size"}, locs(both))
	require.Equal(t, "greater_than_equal", both[0]["type"])
}

func TestRoutingErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	requireError(t, ts.do(t, http.MethodGet, "/v1/nope", admin, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodGet, "/", "", nil), http.StatusNotFound, "NOT_FOUND")

	r := ts.do(t, http.MethodPut, "/v1/api-keys", admin, `{}`)
	requireError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	require.Equal(t, "GET, POST", r.Header.Get("Allow"))
	r = ts.do(t, http.MethodPost, "/v1/api-keys/"+uuid.NewString(), admin, `{}`)
	require.Equal(t, http.StatusMethodNotAllowed, r.Status)
	require.Equal(t, "GET, PATCH, DELETE", r.Header.Get("Allow"))
}

func TestBodyLimit(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	limit := 10 << 20

	t.Run("exactly the limit is read", func(t *testing.T) {
		body := `{"name": "` + strings.Repeat("a", limit-40) + `", "scopes": ["admin"]}`
		body += strings.Repeat(" ", limit-len(body))
		r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "name too long, but the body was accepted for reading")
	})
	t.Run("limit plus one byte", func(t *testing.T) {
		body := strings.Repeat(" ", limit+1)
		r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, body)
		requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
		require.NotEmpty(t, r.Header.Get("X-Request-ID"))
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
	})
	t.Run("compressed body refused", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, "\x1f\x8b", "Content-Encoding", "gzip")
		requireError(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	})
	t.Run("chunked", func(t *testing.T) {
		// An io.Reader of unknown length makes net/http send Transfer-Encoding: chunked.
		body := io.MultiReader(strings.NewReader(`{"name": "`), strings.NewReader(strings.Repeat("a", limit+1)), strings.NewReader(`"}`))
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/api-keys", struct{ io.Reader }{body})
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		requireError(t, response{Status: resp.StatusCode, Header: resp.Header, Body: raw}, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	})
}

func TestRateLimit(t *testing.T) {
	ts := newTestServer(t, func(c *Config, d *Deps) { c.RateLimitPerMinute = 3 })
	key := mustKey(t, ts.Store, auth.ScopeAdmin)
	for i := range 3 {
		r := ts.do(t, http.MethodGet, "/v1/api-keys", key, nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "3", r.Header.Get("X-RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(2-i), r.Header.Get("X-RateLimit-Remaining"))
		require.NotEmpty(t, r.Header.Get("X-RateLimit-Reset"))
	}
	r := ts.do(t, http.MethodGet, "/v1/api-keys", key, nil)
	requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, retry)

	// Another key has its own budget; /health is never limited.
	other := mustKey(t, ts.Store, auth.ScopeAdmin)
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/v1/api-keys", other, nil).Status)
	for range 5 {
		require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/health", "", nil).Status)
	}

	// A key's own rate_limit_per_minute beats the default.
	siem := mustKeyWith(t, ts.Store, func(k *store.APIKey) { n := 10; k.RateLimitPerMinute = &n }, auth.ScopeAdmin)
	for range 10 {
		require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/v1/api-keys", siem, nil).Status)
	}
	require.Equal(t, http.StatusTooManyRequests, ts.do(t, http.MethodGet, "/v1/api-keys", siem, nil).Status)

	// Unauthenticated requests count per client IP.
	for range 3 {
		ts.do(t, http.MethodGet, "/v1/api-keys", "", nil)
	}
	requireError(t, ts.do(t, http.MethodGet, "/v1/api-keys", "", nil), http.StatusTooManyRequests, "RATE_LIMITED")
}

func TestRateLimitPostgres(t *testing.T) {
	ts := newTestServer(t, func(c *Config, d *Deps) {
		c.RateLimitPerMinute = 2
		d.Limiter = ratelimit.NewPostgres(testStore(t))
	})
	key := mustKey(t, ts.Store, auth.ScopeAdmin)
	// Two servers sharing the database share the budget.
	ts2 := newTestServer(t, func(c *Config, d *Deps) {
		c.RateLimitPerMinute = 2
		d.Limiter = ratelimit.NewPostgres(testStore(t))
	})
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/v1/api-keys", key, nil).Status)
	require.Equal(t, http.StatusOK, ts2.do(t, http.MethodGet, "/v1/api-keys", key, nil).Status)
	r := ts.do(t, http.MethodGet, "/v1/api-keys", key, nil)
	if r.Status == http.StatusOK { // the minute rolled over between requests: try once more
		ts2.do(t, http.MethodGet, "/v1/api-keys", key, nil)
		r = ts.do(t, http.MethodGet, "/v1/api-keys", key, nil)
	}
	requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
}

func TestForwardedFor(t *testing.T) {
	untrusted := newTestServer(t, func(c *Config, d *Deps) { c.RateLimitPerMinute = 2 })
	// Without TRUSTED_PROXY_COUNT a spoofed X-Forwarded-For does not buy a new budget.
	for i := range 2 {
		untrusted.do(t, http.MethodGet, "/v1/api-keys", "", nil, "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
	}
	require.Equal(t, http.StatusTooManyRequests, untrusted.do(t, http.MethodGet, "/v1/api-keys", "", nil, "X-Forwarded-For", "203.0.113.99").Status)

	trusted := newTestServer(t, func(c *Config, d *Deps) { c.RateLimitPerMinute = 2; c.TrustedProxyCount = 1 })
	for range 2 {
		trusted.do(t, http.MethodGet, "/v1/api-keys", "", nil, "X-Forwarded-For", "198.51.100.7, 203.0.113.1")
	}
	require.Equal(t, http.StatusTooManyRequests, trusted.do(t, http.MethodGet, "/v1/api-keys", "", nil, "X-Forwarded-For", "198.51.100.7, 203.0.113.1").Status)
	// A different client behind the same proxy has its own budget; the spoofable left part is ignored.
	require.Equal(t, http.StatusUnauthorized, trusted.do(t, http.MethodGet, "/v1/api-keys", "", nil, "X-Forwarded-For", "198.51.100.7, 203.0.113.2").Status)
	require.Equal(t, http.StatusTooManyRequests, trusted.do(t, http.MethodGet, "/v1/api-keys", "", nil, "X-Forwarded-For", "10.9.9.9, 203.0.113.1").Status)
}

func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAdmin)
	for _, r := range []response{
		ts.do(t, http.MethodGet, "/v1/api-keys", key, nil),
		ts.do(t, http.MethodGet, "/v1/api-keys", "", nil),
		ts.do(t, http.MethodGet, "/v1/missing", "", nil),
		ts.do(t, http.MethodGet, "/health", "", nil),
	} {
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
		require.Equal(t, "DENY", r.Header.Get("X-Frame-Options"))
		require.Equal(t, "no-referrer", r.Header.Get("Referrer-Policy"))
		require.Contains(t, r.Header.Get("Content-Security-Policy"), "default-src 'none'")
		_, err := uuid.Parse(r.Header.Get("X-Request-ID"))
		require.NoError(t, err)
	}
	echoed := ts.do(t, http.MethodGet, "/health", "", nil, "X-Request-ID", "trace-abc-123")
	require.Equal(t, "trace-abc-123", echoed.Header.Get("X-Request-ID"))
	hostile := ts.do(t, http.MethodGet, "/health", "", nil, "X-Request-ID", strings.Repeat("x", 300))
	require.NotEqual(t, strings.Repeat("x", 300), hostile.Header.Get("X-Request-ID"))
}

type failingKeys struct{ APIKeyStore }

func (failingKeys) ListAPIKeys(context.Context, store.APIKeyFilter) ([]store.APIKey, int, error) {
	return nil, 0, errors.New(`pq: relation "api_keys" does not exist at SELECT secret_column FROM api_keys`)
}

func TestInternalErrorHidesDetails(t *testing.T) {
	ts := newTestServer(t, func(c *Config, d *Deps) { d.APIKeys = failingKeys{d.APIKeys} })
	key := mustKey(t, ts.Store, auth.ScopeAdmin)
	r := ts.do(t, http.MethodGet, "/v1/api-keys", key, nil)
	m := requireError(t, r, http.StatusInternalServerError, "INTERNAL_ERROR")
	require.NotContains(t, string(r.Body), "SELECT")
	require.NotContains(t, string(r.Body), "api_keys")
	require.Equal(t, r.Header.Get("X-Request-ID"), m["error"].(map[string]any)["details"].(map[string]any)["request_id"])
}

func TestHealth(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do(t, http.MethodGet, "/health", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := r.JSON(t)
	require.Equal(t, "ok", m["status"])
	require.Equal(t, "dev", m["version"])
	require.Equal(t, map[string]any{"database": "ok", "temporal": "ok"}, m["checks"])

	down := newTestServer(t, func(c *Config, d *Deps) {
		d.Health.Temporal = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	})
	start := time.Now()
	r = down.do(t, http.MethodGet, "/health", "", nil)
	require.Less(t, time.Since(start), 3*time.Second, "each check is bounded to 2 s")
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	m = r.JSON(t)
	require.Equal(t, "degraded", m["status"])
	require.Equal(t, "timeout", m["checks"].(map[string]any)["temporal"])
	require.Equal(t, "UNAVAILABLE", m["error"].(map[string]any)["code"])
}

// TestOpenAPICoversRouter walks Fiber's router: every registered route is in the document and every
// documented operation is routed.
func TestOpenAPICoversRouter(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	doc := r.JSON(t)
	require.Equal(t, "3.1.0", doc["openapi"])
	require.Equal(t, "dev", doc["info"].(map[string]any)["version"])
	paths := doc["paths"].(map[string]any)

	routed := map[string]bool{}
	for _, fr := range ts.Server.App().GetRoutes(true) {
		if fr.Method == http.MethodHead || fr.Path == "/" || fr.Method == "USE" {
			continue
		}
		key := strings.ToLower(fr.Method) + " " + openAPIPath(fr.Path)
		routed[key] = true
		item, ok := paths[openAPIPath(fr.Path)].(map[string]any)
		require.True(t, ok, "route %s %s missing from the document", fr.Method, fr.Path)
		require.Contains(t, item, strings.ToLower(fr.Method), "route %s %s missing from the document", fr.Method, fr.Path)
	}
	for p, item := range paths {
		for m := range item.(map[string]any) {
			require.True(t, routed[m+" "+p], "documented %s %s is not routed", m, p)
		}
	}

	docs := ts.do(t, http.MethodGet, "/docs", "", nil)
	require.Equal(t, http.StatusOK, docs.Status)
	require.Contains(t, docs.Header.Get("Content-Type"), "text/html")
	require.Contains(t, string(docs.Body), "/v1/api-keys/{uuid}")
	require.NotContains(t, string(docs.Body), "<script")
}

type slowKeys struct{ APIKeyStore }

func (slowKeys) ListAPIKeys(context.Context, store.APIKeyFilter) ([]store.APIKey, int, error) {
	return nil, 0, fmt.Errorf("list api keys: %w", context.DeadlineExceeded)
}

func TestDependencyTimeoutIs503(t *testing.T) {
	ts := newTestServer(t, func(c *Config, d *Deps) { d.APIKeys = slowKeys{d.APIKeys} })
	key := mustKey(t, ts.Store, auth.ScopeAdmin)
	r := ts.do(t, http.MethodGet, "/v1/api-keys", key, nil)
	requireError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.NotContains(t, string(r.Body), "list api keys")
}
