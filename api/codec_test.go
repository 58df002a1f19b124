package api

import (
	"crypto/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

const testUIOrigin = "http://127.0.0.1:8233"

func codecServer(t *testing.T, mutate func(*Config, *Deps)) (*testServer, *payloadcodec.Codec) {
	t.Helper()
	secret := make([]byte, payloadcodec.KeySize)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	codec, err := payloadcodec.New([]payloadcodec.Key{{ID: "k1", Secret: secret}})
	require.NoError(t, err)
	ts := newTestServer(t, func(c *Config, d *Deps) {
		d.PayloadCodec, c.CodecAllowedOrigin = codec.AllowPlaintext(), testUIOrigin // as cmd/vigil wires the endpoint
		if mutate != nil {
			mutate(c, d)
		}
	})
	return ts, codec
}

func payloadsJSON(t *testing.T, ps ...*commonpb.Payload) string {
	t.Helper()
	raw, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
	require.NoError(t, err)
	return string(raw)
}

func parsePayloads(t *testing.T, raw []byte) []*commonpb.Payload {
	t.Helper()
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(raw, &out), string(raw))
	return out.Payloads
}

func TestCodec_DecodeAndEncodeForAdmins(t *testing.T) {
	ts, codec := codecServer(t, nil)
	admin := mustKey(t, ts.Store, "admin")
	clear, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"indicator": "198.51.100.7"})
	require.NoError(t, err)
	enc, err := codec.Encode([]*commonpb.Payload{clear})
	require.NoError(t, err)
	old, err := converter.GetDefaultDataConverter().ToPayload("written before encryption")
	require.NoError(t, err)

	r := ts.do(t, http.MethodPost, "/codec/decode", admin, payloadsJSON(t, enc[0], old), "X-Namespace", "default")
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	got := parsePayloads(t, r.Body)
	require.Len(t, got, 2)
	require.Equal(t, clear.Data, got[0].Data)
	require.Equal(t, "json/plain", string(got[0].Metadata["encoding"]))
	require.Equal(t, old.Data, got[1].Data, "a payload written before encryption comes back as it is")

	r = ts.do(t, http.MethodPost, "/codec/encode", admin, payloadsJSON(t, clear))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	encoded := parsePayloads(t, r.Body)
	require.Equal(t, payloadcodec.Encoding, string(encoded[0].Metadata["encoding"]))
	require.NotContains(t, string(r.Body), "198.51.100.7")
	back, err := codec.Decode(encoded)
	require.NoError(t, err)
	require.Equal(t, clear.Data, back[0].Data)

	// An empty list is a valid (empty) answer.
	r = ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Empty(t, parsePayloads(t, r.Body))
}

func TestCodec_RefusesWithoutAnAdminKey(t *testing.T) {
	ts, codec := codecServer(t, nil)
	enc, err := codec.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"secret title"`)}})
	require.NoError(t, err)
	body := payloadsJSON(t, enc...)
	for _, path := range []string{"/codec/decode", "/codec/encode"} {
		r := ts.do(t, http.MethodPost, path, "", body)
		requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		require.NotContains(t, string(r.Body), "secret title")
		r = ts.do(t, http.MethodPost, path, "cai_notakey", body)
		requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		reader := mustKey(t, ts.Store, "alerts:read", "alerts:write", "workflows:read")
		r = ts.do(t, http.MethodPost, path, reader, body)
		m := requireError(t, r, http.StatusForbidden, "FORBIDDEN")
		require.Contains(t, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"], "admin")
		require.NotContains(t, string(r.Body), "secret title")
	}
	// Other methods are not routes of their own.
	r := ts.do(t, http.MethodGet, "/codec/decode", mustKey(t, ts.Store, "admin"), nil)
	requireError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
}

func TestCodec_BadInput(t *testing.T) {
	ts, codec := codecServer(t, func(c *Config, _ *Deps) { c.MaxRequestBodyMB = 1 })
	admin := mustKey(t, ts.Store, "admin")
	enc, err := codec.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`1`)}})
	require.NoError(t, err)
	tampered := &commonpb.Payload{Metadata: enc[0].Metadata, Data: append([]byte(nil), enc[0].Data...)}
	tampered.Data[20] ^= 0xff
	unknownKey := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte(payloadcodec.Encoding), payloadcodec.MetadataKeyID: []byte("gone")}, Data: enc[0].Data}

	requireError(t, ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": [`), http.StatusBadRequest, "INVALID_JSON")
	requireValidation(t, ts.do(t, http.MethodPost, "/codec/decode", admin, ``))
	for name, body := range map[string]string{
		"payloads not a list": `{"payloads": "x"}`,
		"data not base64":     `{"payloads": [{"data": "%%%"}]}`,
		"metadata a list":     `{"payloads": [{"metadata": [1, 2]}]}`,
		"unknown field":       `{"payloads": [], "extra": true}`,
		"a list":              `[1, 2]`,
		"hostile":             `{"payloads": [{"metadata": {"<script>": 1}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			detail := requireValidation(t, ts.do(t, http.MethodPost, "/codec/decode", admin, body))
			require.Equal(t, []any{"body"}, detail[0]["loc"])
		})
	}
	// A payload that does not decrypt is named by its place, the others are not returned half-done.
	r := ts.do(t, http.MethodPost, "/codec/decode", admin, payloadsJSON(t, enc[0], tampered, unknownKey))
	detail := requireValidation(t, r)
	require.Len(t, detail, 2)
	require.Equal(t, []any{"body", "payloads", float64(1)}, detail[0]["loc"])
	require.Contains(t, detail[0]["msg"], "does not decrypt")
	require.Equal(t, []any{"body", "payloads", float64(2)}, detail[1]["loc"])
	require.Contains(t, detail[1]["msg"], `"gone"`)
	require.NotContains(t, string(r.Body), `"payloads":[{`, "no partial answer")

	requireError(t, ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`, "Content-Type", "text/plain"),
		http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	requireError(t, ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`, "Content-Encoding", "gzip"),
		http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	big := `{"payloads": [{"data": "` + strings.Repeat("A", 2<<20) + `"}]}`
	requireError(t, ts.do(t, http.MethodPost, "/codec/decode", admin, big), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
}

func TestCodec_CORSAnswersOnlyTheTemporalUI(t *testing.T) {
	ts, _ := codecServer(t, nil)
	admin := mustKey(t, ts.Store, "admin")

	r := ts.do(t, http.MethodOptions, "/codec/decode", "", nil, "Origin", testUIOrigin,
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type,x-namespace")
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	require.Equal(t, testUIOrigin, r.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "POST", r.Header.Get("Access-Control-Allow-Methods"))
	require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "Authorization")
	require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "X-Namespace")
	require.Contains(t, r.Header.Values("Vary"), "Origin")
	require.NotEmpty(t, r.Header.Get("X-RateLimit-Limit"), "preflights count against the client IP's budget")

	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:8234", "null", testUIOrigin + ".evil.example", ""} {
		r := ts.do(t, http.MethodOptions, "/codec/encode", "", nil, "Origin", origin, "Access-Control-Request-Method", "POST")
		requireError(t, r, http.StatusForbidden, "FORBIDDEN")
		require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), origin)
	}

	// The answer itself carries the origin for the UI (errors too, so it can show the refusal) and
	// never for another origin.
	r = ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`, "Origin", testUIOrigin)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, testUIOrigin, r.Header.Get("Access-Control-Allow-Origin"))
	r = ts.do(t, http.MethodPost, "/codec/decode", "", `{"payloads": []}`, "Origin", testUIOrigin)
	requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	require.Equal(t, testUIOrigin, r.Header.Get("Access-Control-Allow-Origin"))
	r = ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`, "Origin", "http://evil.example")
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))

	// No TEMPORAL_UI_URL: no origin is answered.
	none, _ := codecServer(t, func(c *Config, _ *Deps) { c.CodecAllowedOrigin = "" })
	r = none.do(t, http.MethodOptions, "/codec/decode", "", nil, "Origin", testUIOrigin, "Access-Control-Request-Method", "POST")
	requireError(t, r, http.StatusForbidden, "FORBIDDEN")
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
}

func TestCodec_RateLimited(t *testing.T) {
	ts, _ := codecServer(t, func(c *Config, _ *Deps) { c.RateLimitPerMinute = 2 })
	admin := mustKey(t, ts.Store, "admin")
	for range 2 {
		require.Equal(t, http.StatusOK, ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`).Status)
	}
	r := ts.do(t, http.MethodPost, "/codec/decode", admin, `{"payloads": []}`, "Origin", testUIOrigin)
	requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, testUIOrigin, r.Header.Get("Access-Control-Allow-Origin"))
}

func TestCodec_NotServedWithoutACodec(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do(t, http.MethodPost, "/codec/decode", mustKey(t, ts.Store, "admin"), `{"payloads": []}`)
	requireError(t, r, http.StatusNotFound, "NOT_FOUND")
}
