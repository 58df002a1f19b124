package httpsteps_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/netguard"
)

// recorder keeps the headers of every request it receives.
type recorder struct {
	mu   sync.Mutex
	seen []http.Header
	urls []string
}

func (r *recorder) add(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := req.Header.Clone()
	h.Set("X-Seen-Method", req.Method)
	r.seen, r.urls = append(r.seen, h), append(r.urls, req.URL.String())
}

func (r *recorder) all() ([]http.Header, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen, r.urls
}

// Issue 12 item 4: redirects are not followed unless the step says so, and then never carry the step's
// headers, credentials or a Referer to another origin.
func TestDo_RedirectsDoNotCarryCredentials(t *testing.T) {
	other := &recorder{}
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(foreign.Close)
	home := &recorder{}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.add(r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, foreign.URL+"/landing", http.StatusFound)
		case "/away307":
			http.Redirect(w, r, foreign.URL+"/landing", http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/final", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok": true}`))
		}
	}))
	t.Cleanup(origin.Close)
	runner := httpsteps.NewRunner(netguard.NewGuard([]string{"127.0.0.1"}).HTTPClient(10 * time.Second))
	step := func(path string, follow bool, method string) httpsteps.PreparedRequest {
		p := httpsteps.PreparedRequest{StepName: "s", Method: method, URL: origin.URL + path + "?key=" + apiKey,
			Headers:        map[string]string{"X-Apikey": apiKey, "Key": apiKey, "Authorization": "Bearer " + apiKey},
			ExpectedStatus: []int{200}, Timeout: 5 * time.Second, FollowRedirects: follow, Secrets: []string{apiKey}}
		if method == http.MethodPost {
			p.Body = []byte(`{"secret": "` + apiKey + `"}`)
			p.Headers["Content-Type"] = "application/json"
		}
		return p
	}
	noCredentials := func(t *testing.T) {
		t.Helper()
		seen, urls := other.all()
		for i, h := range seen {
			require.Empty(t, h.Get("X-Apikey"), urls[i])
			require.Empty(t, h.Get("Key"))
			require.Empty(t, h.Get("Authorization"))
			require.Empty(t, h.Get("Referer"))
			require.NotContains(t, urls[i], apiKey)
		}
	}

	// Default: the 302 is the step's answer; nothing reaches the other origin.
	out, err := runner.Do(context.Background(), step("/away", false, http.MethodGet))
	require.Error(t, err)
	require.Equal(t, http.StatusFound, out.Status)
	seen, _ := other.all()
	require.Empty(t, seen)

	// follow_redirects: followed, but bare.
	out, err = runner.Do(context.Background(), step("/away", true, http.MethodGet))
	require.NoError(t, err, out.Record.Error)
	seen, _ = other.all()
	require.Len(t, seen, 1)
	noCredentials(t)

	// A POST answered 302 continues as a bodiless GET; a 307 would resend the body across origins: refused.
	_, err = runner.Do(context.Background(), step("/away", true, http.MethodPost))
	require.NoError(t, err)
	seen, _ = other.all()
	require.Equal(t, http.MethodGet, seen[len(seen)-1].Get("X-Seen-Method"))
	before := len(seen)
	out, err = runner.Do(context.Background(), step("/away307", true, http.MethodPost))
	require.Error(t, err)
	require.Contains(t, out.Record.Error, "another origin")
	seen, _ = other.all()
	require.Len(t, seen, before)
	noCredentials(t)

	// Same origin keeps the step's headers (the legitimate path), still no Referer.
	_, err = runner.Do(context.Background(), step("/here", true, http.MethodGet))
	require.NoError(t, err)
	hs, urls := home.all()
	last := hs[len(hs)-1]
	require.True(t, strings.HasPrefix(urls[len(urls)-1], "/final"), urls)
	require.Equal(t, apiKey, last.Get("X-Apikey"))
	require.Empty(t, last.Get("Referer"))
}

func TestParseConfig_FollowRedirects(t *testing.T) {
	cfg := mustConfig(t, `{"steps": [{"name": "a", "url": "https://x.example/", "follow_redirects": true}, {"name": "b", "url": "https://x.example/"}]}`)
	require.True(t, cfg.Steps[0].FollowRedirects)
	require.False(t, cfg.Steps[1].FollowRedirects)
	_, errs := httpsteps.ParseConfig([]byte(`{"steps": [{"name": "a", "url": "https://x.example/", "follow_redirects": "yes"}]}`))
	require.Len(t, errs, 1)
	require.Equal(t, []any{"steps", 0, "follow_redirects"}, errs[0].Loc)
}
