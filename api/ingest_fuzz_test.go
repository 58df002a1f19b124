package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

var fuzzSources = []string{"sentinel", "elastic", "splunk", "generic"}

// FuzzIngestNormalize sends arbitrary bodies to every plugin through the HTTP handler: whatever the
// payload, the answer is a 2xx or a 4xx with the contract's error body, never a 5xx or a panic.
func FuzzIngestNormalize(f *testing.F) {
	ts := newAlertServer(f, nil)
	key := mustKey(f, ts.Store, auth.ScopeAlertsWrite)
	files, err := filepath.Glob(filepath.Join("..", "kit", "sources", "testdata", "*.json"))
	require.NoError(f, err)
	require.NotEmpty(f, files, "the source fixtures moved?")
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		for i, s := range fuzzSources {
			if strings.HasPrefix(filepath.Base(file), s) {
				f.Add(uint8(i), b)
			}
		}
	}
	for i := range fuzzSources {
		for _, seed := range []string{`{}`, `[]`, `null`, `"x"`, `1e999`, `{"title":""}`, `{"title":"\u0000"}`, `{"title":{"a":1}}`,
			`{"properties":{"title":"t","severity":7,"labels":"x"},"Entities":"[{\"Type\":\"ip\",\"Address\":5}]"}`,
			`{"kibana.alert.rule.name":"r","kibana":{"alert":{"rule":{"name":["a"]}}},"source.ip":[1,2,3]}`,
			`{"search_name":"s","result":{"_time":"-1e308","src_ip":{"x":1},"urgency":null}}`,
			`{"title":"t","indicators":[{"type":"ip","value":"999.1.1.1"},{"type":"nope","value":"x"},7],"tags":[1,[2]]}`,
			`{"title":"t","occurred_at":"2026-13-45T99:99:99Z","severity":"HIGH"}`,
			strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000)} {
			f.Add(uint8(i), []byte(seed))
		}
	}
	app := ts.Server.App()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		source := fuzzSources[int(which)%len(fuzzSources)]
		req := httptest.NewRequest(http.MethodPost, "/v1/ingest/"+source, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := app.Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 500, "%s: %s", source, raw)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
		if resp.StatusCode >= 400 {
			require.Contains(t, m, "error", string(raw))
			require.Contains(t, []int{400, 413, 415, 422}, resp.StatusCode, string(raw))
		} else {
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
		}
	})
}
