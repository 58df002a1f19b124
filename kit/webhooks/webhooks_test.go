package webhooks_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/webhooks"
)

// A known vector: HMAC-SHA256("secret", "1700000000.{}"), computed independently with openssl.
func TestSign_KnownVector(t *testing.T) {
	require.Equal(t, "v1=b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163",
		webhooks.Sign("secret", "1700000000", []byte("{}")))
}

func TestVerify(t *testing.T) {
	body := []byte(`{"id":"d1","event":"agent.test"}`)
	sig := webhooks.Sign("s1", "1700000000", body)
	require.True(t, webhooks.Verify("s1", "1700000000", body, sig))
	require.True(t, webhooks.Verify("s1", "1700000000", body, "v1=00, "+sig), "any of several signatures")
	require.False(t, webhooks.Verify("s2", "1700000000", body, sig), "another secret")
	require.False(t, webhooks.Verify("s1", "1700000001", body, sig), "another timestamp")
	require.False(t, webhooks.Verify("s1", "1700000000", append(body, ' '), sig), "another body")
	require.False(t, webhooks.Verify("s1", "1700000000", body, ""), "no signature")
}

func TestSetHeaders(t *testing.T) {
	h := http.Header{}
	body := []byte(`{}`)
	webhooks.SetHeaders(h, "s", "alert.enriched", "d-1", body, time.Unix(1700000000, 0))
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.Equal(t, "alert.enriched", h.Get(webhooks.HeaderEvent))
	require.Equal(t, "d-1", h.Get(webhooks.HeaderDelivery))
	require.Equal(t, "1700000000", h.Get(webhooks.HeaderTimestamp))
	require.True(t, webhooks.Verify("s", "1700000000", body, h.Get(webhooks.HeaderSignature)))
}
