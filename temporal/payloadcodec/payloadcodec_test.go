package payloadcodec_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

func key(t *testing.T, id string) payloadcodec.Key {
	t.Helper()
	b := make([]byte, payloadcodec.KeySize)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return payloadcodec.Key{ID: id, Secret: b}
}

func codec(t *testing.T, keys ...payloadcodec.Key) *payloadcodec.Codec {
	t.Helper()
	c, err := payloadcodec.New(keys)
	require.NoError(t, err)
	return c
}

func jsonPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

func TestCodec_RoundTripHidesTheValue(t *testing.T) {
	c := codec(t, key(t, "k1"))
	in := []*commonpb.Payload{jsonPayload(t, map[string]string{"indicator": "evil.example.com"}), jsonPayload(t, nil)}
	enc, err := c.Encode(in)
	require.NoError(t, err)
	require.Len(t, enc, 2)
	for _, p := range enc {
		require.Equal(t, payloadcodec.Encoding, string(p.Metadata[converter.MetadataEncoding]))
		require.Equal(t, "k1", string(p.Metadata[payloadcodec.MetadataKeyID]))
		require.False(t, bytes.Contains(p.Data, []byte("evil.example.com")))
	}
	require.NotEqual(t, enc[0].Data, enc[1].Data)
	dec, err := c.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, in[0].Data, dec[0].Data)
	require.Equal(t, in[0].Metadata, dec[0].Metadata)
	require.Equal(t, in[1].Metadata, dec[1].Metadata)

	// Two encodings of one payload differ (random nonce).
	again, err := c.Encode(in[:1])
	require.NoError(t, err)
	require.NotEqual(t, enc[0].Data, again[0].Data)
}

// TestCodec_RefusesUnencryptedPayloads: a payload without the encrypted encoding (a client without
// the codec, such as the Temporal CLI) is refused; AllowPlaintext (the upgrade window's switch)
// passes it through unchanged, and still opens encrypted ones.
func TestCodec_RefusesUnencryptedPayloads(t *testing.T) {
	c := codec(t, key(t, "k1"))
	old := jsonPayload(t, "written before encryption")
	_, err := c.Decode([]*commonpb.Payload{old})
	require.ErrorIs(t, err, payloadcodec.ErrPlaintext)
	dec, err := c.Decode([]*commonpb.Payload{nil})
	require.NoError(t, err)
	require.Nil(t, dec[0])

	lax := c.AllowPlaintext()
	dec, err = lax.Decode([]*commonpb.Payload{old, nil})
	require.NoError(t, err)
	require.Same(t, old, dec[0])
	require.Nil(t, dec[1])
	enc, err := c.Encode([]*commonpb.Payload{jsonPayload(t, "new")})
	require.NoError(t, err)
	dec, err = lax.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, `"new"`, string(dec[0].Data))
	_, err = c.Decode([]*commonpb.Payload{old})
	require.ErrorIs(t, err, payloadcodec.ErrPlaintext, "AllowPlaintext does not change the codec it copies")
}

func TestCodec_RotationOldKeyStillDecrypts(t *testing.T) {
	a, b := key(t, "a"), key(t, "b")
	encA, err := codec(t, a).Encode([]*commonpb.Payload{jsonPayload(t, "old run")})
	require.NoError(t, err)
	ring := codec(t, b, a)
	require.Equal(t, "b", ring.EncryptingKeyID())
	require.Equal(t, []string{"b", "a"}, ring.KeyIDs())
	dec, err := ring.Decode(encA)
	require.NoError(t, err)
	require.Contains(t, string(dec[0].Data), "old run")
	encB, err := ring.Encode([]*commonpb.Payload{jsonPayload(t, "new run")})
	require.NoError(t, err)
	require.Equal(t, "b", string(encB[0].Metadata[payloadcodec.MetadataKeyID]))

	// Without key a (dropped too early) the old payload is refused, by name.
	_, err = codec(t, b).Decode(encA)
	require.ErrorIs(t, err, payloadcodec.ErrUnknownKey)
	require.Contains(t, err.Error(), `"a"`)
}

func TestCodec_RefusesTamperedAndHostilePayloads(t *testing.T) {
	k := key(t, "k1")
	c := codec(t, k)
	enc, err := c.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	require.NoError(t, err)

	flipped := &commonpb.Payload{Metadata: enc[0].Metadata, Data: append([]byte(nil), enc[0].Data...)}
	flipped.Data[len(flipped.Data)-1] ^= 1
	_, err = c.Decode([]*commonpb.Payload{flipped})
	require.ErrorIs(t, err, payloadcodec.ErrDecrypt)

	// The key id is authenticated: relabelling a payload to another key of the ring fails.
	other := key(t, "k2")
	other.Secret = k.Secret
	ring := codec(t, k, other)
	relabelled := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(payloadcodec.Encoding),
		payloadcodec.MetadataKeyID: []byte("k2")}, Data: enc[0].Data}
	_, err = ring.Decode([]*commonpb.Payload{relabelled})
	require.ErrorIs(t, err, payloadcodec.ErrDecrypt)

	for name, p := range map[string]*commonpb.Payload{
		"empty data":  {Metadata: enc[0].Metadata},
		"short data":  {Metadata: enc[0].Metadata, Data: []byte("abc")},
		"no key id":   {Metadata: map[string][]byte{converter.MetadataEncoding: []byte(payloadcodec.Encoding)}, Data: enc[0].Data},
		"huge key id": {Metadata: map[string][]byte{converter.MetadataEncoding: []byte(payloadcodec.Encoding), payloadcodec.MetadataKeyID: bytes.Repeat([]byte("x"), 1<<16)}, Data: enc[0].Data},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Decode([]*commonpb.Payload{p})
			require.Error(t, err)
			require.True(t, errors.Is(err, payloadcodec.ErrDecrypt) || errors.Is(err, payloadcodec.ErrUnknownKey), err)
			require.Less(t, len(err.Error()), 300)
		})
	}

	// A different secret under the same id (ENCRYPTION_KEY replaced without a ring) is refused.
	_, err = codec(t, key(t, "k1")).Decode(enc)
	require.ErrorIs(t, err, payloadcodec.ErrDecrypt)
}

func TestNew_RefusesBadRings(t *testing.T) {
	good := key(t, "k1")
	for name, keys := range map[string][]payloadcodec.Key{
		"none":       nil,
		"short key":  {{ID: "k1", Secret: []byte("short")}},
		"empty id":   {{ID: "", Secret: good.Secret}},
		"bad id":     {{ID: "k 1", Secret: good.Secret}},
		"long id":    {{ID: strings.Repeat("a", 65), Secret: good.Secret}},
		"duplicates": {good, good},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := payloadcodec.New(keys)
			require.Error(t, err)
		})
	}
}

func TestParseKeys(t *testing.T) {
	a, b := key(t, "a"), key(t, "b")
	s := "b:" + base64.StdEncoding.EncodeToString(b.Secret) + " , a:" + base64.RawURLEncoding.EncodeToString(a.Secret)
	keys, err := payloadcodec.ParseKeys(s)
	require.NoError(t, err)
	require.Equal(t, []payloadcodec.Key{b, a}, keys)

	secret := base64.StdEncoding.EncodeToString(a.Secret)
	for name, in := range map[string]string{
		"empty":       " , ",
		"no colon":    secret,
		"bad id":      "a b:" + secret,
		"not base64":  "a:%%%%",
		"16 bytes":    "a:" + base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"duplicate":   "a:" + secret + ",a:" + secret,
		"empty key":   "a:",
		"hostile id":  "<script>:" + secret,
		"control id":  "a\x00:" + secret,
		"very long":   strings.Repeat("x", 1<<16) + ":" + secret,
		"one bad two": "a:" + secret + ",b:short",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := payloadcodec.ParseKeys(in)
			require.Error(t, err)
			require.NotContains(t, err.Error(), secret, "an error never shows a key")
		})
	}
}

func TestDerive(t *testing.T) {
	master := key(t, "m").Secret
	k1, err := payloadcodec.Derive(master)
	require.NoError(t, err)
	k2, err := payloadcodec.Derive(master)
	require.NoError(t, err)
	require.Equal(t, k1, k2, "deterministic: every process of one deployment derives the same key")
	require.NotEqual(t, master, k1.Secret, "its own label: never the key sealing secrets at rest")
	require.Regexp(t, `^derived-[0-9a-f]{8}$`, k1.ID)
	other, err := payloadcodec.Derive(key(t, "n").Secret)
	require.NoError(t, err)
	require.NotEqual(t, k1.ID, other.ID)
	_, err = payloadcodec.Derive([]byte("short"))
	require.Error(t, err)
	_, err = payloadcodec.New([]payloadcodec.Key{k1})
	require.NoError(t, err)
}

func TestDataConverter_EncryptsThroughTheSDKConverter(t *testing.T) {
	c := codec(t, key(t, "k1"))
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
	p, err := dc.ToPayload(map[string]string{"title": "Beaconing to evil.example.com"})
	require.NoError(t, err)
	require.False(t, bytes.Contains(p.Data, []byte("evil.example.com")))
	var out map[string]string
	require.NoError(t, dc.FromPayload(p, &out))
	require.Equal(t, "Beaconing to evil.example.com", out["title"])
	// An unencrypted payload is refused, and converts only through a codec allowing plaintext.
	var s string
	require.ErrorIs(t, dc.FromPayload(jsonPayload(t, "old"), &s), payloadcodec.ErrPlaintext)
	lax := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c.AllowPlaintext())
	require.NoError(t, lax.FromPayload(jsonPayload(t, "old"), &s))
	require.Equal(t, "old", s)
}
