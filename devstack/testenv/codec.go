package testenv

import (
	"crypto/rand"
	"testing"

	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

// PayloadCodec returns this test binary's payload codec (one random key, id "test", the same for
// every call): tests dial their Temporal clients with it, as every process of Vigil encrypts its
// payloads (API.md §16). Pass it as temporal.Config.Codec.
func PayloadCodec(tb testing.TB) *payloadcodec.Codec {
	tb.Helper()
	env.codecOnce.Do(func() {
		secret := make([]byte, payloadcodec.KeySize)
		if _, err := rand.Read(secret); err != nil {
			env.codecErr = err
			return
		}
		env.codec, env.codecErr = payloadcodec.New([]payloadcodec.Key{{ID: "test", Secret: secret}})
	})
	if env.codecErr != nil {
		tb.Fatalf("testenv: payload codec: %v", env.codecErr)
	}
	return env.codec
}
