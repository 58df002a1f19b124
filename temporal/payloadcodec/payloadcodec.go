// Package payloadcodec encrypts what a Temporal client hands to the server: a converter.PayloadCodec
// with AES-256-GCM over a key ring (API.md §16).
//
// An encoded payload has the metadata encoding "binary/encrypted" and the id of the key that sealed
// it under "encryption-key-id"; its data is a 12-byte random nonce followed by the GCM ciphertext of
// the original payload (protobuf: its metadata and data, so the original encoding comes back on
// decode). The key id and the encoding are authenticated as additional data. The first key of the
// ring encrypts; every key decrypts, so a new key goes first and the old ones stay until no history
// that needs them is kept (rotation). A payload without the encoding is refused on decode
// (ErrPlaintext): anyone who can reach the Temporal frontend can write one, and the worker would act
// on it (security review round 4, R4-5). AllowPlaintext passes such payloads through unchanged, for
// histories written before encryption (the upgrade window) and for display.
//
// The package knows no rule of Vigil: it is given its keys (cmd/vigil reads TEMPORAL_PAYLOAD_KEYS or
// derives one from ENCRYPTION_KEY with Derive).
package payloadcodec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

const (
	// Encoding is the metadata encoding of an encrypted payload.
	Encoding = "binary/encrypted"
	// MetadataKeyID is the metadata key holding the id of the key that encrypted the payload.
	MetadataKeyID = "encryption-key-id"
	// KeySize is the length of every key (AES-256).
	KeySize = 32
	// MaxKeyIDLen bounds a key id (it is written into every payload).
	MaxKeyIDLen = 64

	nonceSize = 12
	// deriveLabel is the HKDF info of the key derived from ENCRYPTION_KEY: its own label, so the
	// derived key is never the key that seals secrets at rest.
	deriveLabel = "vigil temporal payload codec v1"
	// deriveIDLabel derives the derived key's id (a fingerprint that tells two ENCRYPTION_KEYs apart
	// and reveals nothing of either).
	deriveIDLabel = "vigil temporal payload codec key id v1"
)

// ErrUnknownKey is returned (wrapped) when a payload was encrypted with a key id the ring lacks.
var ErrUnknownKey = errors.New("payload encrypted with a key that is not configured")

// ErrDecrypt is returned (wrapped) when an encrypted payload does not open: tampered, truncated, or a
// different key under the same id.
var ErrDecrypt = errors.New("payload does not decrypt")

// ErrPlaintext is returned (wrapped) when a payload is not encrypted and the codec does not allow
// plaintext.
var ErrPlaintext = errors.New("payload is not encrypted")

// Key is one key of the ring: its id (written into each payload it encrypts) and 32 bytes.
type Key struct {
	ID     string
	Secret []byte
}

// Codec is the AES-256-GCM converter.PayloadCodec over a key ring. Safe for concurrent use.
type Codec struct {
	encID string
	aeads map[string]cipher.AEAD
	ids   []string
	// plaintext: Decode passes unencrypted payloads through instead of refusing them.
	plaintext bool
}

// AllowPlaintext returns a codec over the same ring whose Decode passes a payload without the
// encrypted encoding through unchanged (TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT during the upgrade window;
// the codec endpoint, which only displays).
func (c *Codec) AllowPlaintext() *Codec {
	cp := *c
	cp.plaintext = true
	return &cp
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns the codec of keys: the first encrypts, all decrypt. Ids must be unique, non-empty,
// at most 64 characters of [A-Za-z0-9._-]; every secret 32 bytes.
func New(keys []Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("payload codec: no key")
	}
	c := &Codec{encID: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		if err := validID(k.ID); err != nil {
			return nil, fmt.Errorf("payload codec: key %d: %w", i+1, err)
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("payload codec: key %q is %d bytes, want %d", k.ID, len(k.Secret), KeySize)
		}
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("payload codec: key id %q appears twice", k.ID)
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("payload codec: key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("payload codec: key %q: %w", k.ID, err)
		}
		c.aeads[k.ID] = aead
		c.ids = append(c.ids, k.ID)
	}
	return c, nil
}

// EncryptingKeyID is the id of the key new payloads are encrypted with.
func (c *Codec) EncryptingKeyID() string { return c.encID }

// KeyIDs lists the ring's key ids, the encrypting one first.
func (c *Codec) KeyIDs() []string { return append([]string(nil), c.ids...) }

func validID(id string) error {
	if id == "" {
		return errors.New("empty key id")
	}
	if len(id) > MaxKeyIDLen {
		return fmt.Errorf("key id longer than %d characters", MaxKeyIDLen)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("key id %q: only letters, digits, '.', '_' and '-'", id)
		}
	}
	return nil
}

// ParseKeys reads a ring written as comma-separated id:base64key (standard or URL alphabet, padded or
// not), e.g. "k2:…,k1:…". Every problem is reported at once; no secret is ever part of an error.
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	var errs []error
	seen := map[string]bool{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		id = strings.TrimSpace(id)
		if !ok {
			errs = append(errs, fmt.Errorf("entry %d: want id:base64key", i+1))
			continue
		}
		if err := validID(id); err != nil {
			errs = append(errs, fmt.Errorf("entry %d: %w", i+1, err))
			continue
		}
		if seen[id] {
			errs = append(errs, fmt.Errorf("entry %d: key id %q appears twice", i+1, id))
			continue
		}
		seen[id] = true
		secret, err := decodeKey(strings.TrimSpace(b64))
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", id, err))
			continue
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("no key: want id:base64key[,id:base64key…]")
	}
	return keys, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != KeySize {
			return nil, fmt.Errorf("decodes to %d bytes, want %d", len(b), KeySize)
		}
		return b, nil
	}
	return nil, errors.New("not base64")
}

// Derive returns the one key derived from master (ENCRYPTION_KEY's 32 bytes) with HKDF-SHA256 under
// the codec's own label, and an id that is a fingerprint of it ("derived-" and 8 hex digits), so
// payloads written under one ENCRYPTION_KEY are told apart from another's.
func Derive(master []byte) (Key, error) {
	if len(master) != KeySize {
		return Key{}, fmt.Errorf("derive payload key: master key is %d bytes, want %d", len(master), KeySize)
	}
	secret, err := hkdf.Key(sha256.New, master, nil, deriveLabel, KeySize)
	if err != nil {
		return Key{}, fmt.Errorf("derive payload key: %w", err)
	}
	fp, err := hkdf.Key(sha256.New, master, nil, deriveIDLabel, 4)
	if err != nil {
		return Key{}, fmt.Errorf("derive payload key id: %w", err)
	}
	return Key{ID: "derived-" + hex.EncodeToString(fp), Secret: secret}, nil
}

// Encode encrypts every payload with the ring's first key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.encID]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("payload codec: marshal payload: %w", err)
		}
		buf := make([]byte, nonceSize, nonceSize+len(plain)+aead.Overhead())
		if _, err := rand.Read(buf); err != nil {
			return nil, fmt.Errorf("payload codec: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), MetadataKeyID: []byte(c.encID)},
			Data:     aead.Seal(buf, buf, plain, additionalData(c.encID)),
		}
	}
	return out, nil
}

// Decode decrypts every encrypted payload with the key its metadata names; a payload of another
// encoding is refused (ErrPlaintext), or returned as it is when the codec allows plaintext.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if p == nil {
			continue
		}
		if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != Encoding {
			if !c.plaintext {
				return nil, fmt.Errorf("payload codec: encoding %q: %w", truncate(enc), ErrPlaintext)
			}
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, fmt.Errorf("payload codec: key id %q: %w", truncate(id), ErrUnknownKey)
		}
		data := p.GetData()
		if len(data) < nonceSize+aead.Overhead() {
			return nil, fmt.Errorf("payload codec: key id %q: %w (truncated)", id, ErrDecrypt)
		}
		plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], additionalData(id))
		if err != nil {
			return nil, fmt.Errorf("payload codec: key id %q: %w", id, ErrDecrypt)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(plain, &orig); err != nil {
			return nil, fmt.Errorf("payload codec: key id %q: %w (not a payload)", id, ErrDecrypt)
		}
		out[i] = &orig
	}
	return out, nil
}

// additionalData binds the encoding and the key id to the ciphertext.
func additionalData(id string) []byte { return []byte(Encoding + "\x00" + id) }

func truncate(s string) string {
	if len(s) > MaxKeyIDLen {
		return s[:MaxKeyIDLen] + "…"
	}
	return s
}
