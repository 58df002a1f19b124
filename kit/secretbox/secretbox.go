// Package secretbox seals secrets at rest with AES-256-GCM.
//
// A sealed value is: one version byte (currently 1), a 12-byte random nonce, then the GCM ciphertext
// with its 16-byte tag. The version byte is authenticated as additional data, so it cannot be altered
// without Open failing.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const (
	// KeySize is the required key length in bytes (AES-256).
	KeySize = 32
	// Version is the format byte written at the start of every sealed value.
	Version byte = 1
	// NonceSize is the GCM nonce length.
	NonceSize = 12
	// Overhead is the number of bytes Seal adds to a plaintext.
	Overhead = 1 + NonceSize + 16
)

// ErrOpen is returned (wrapped) when a sealed value cannot be opened: wrong key, tampered or truncated
// data, or an unknown version.
var ErrOpen = errors.New("secretbox: cannot open sealed value")

// Box seals and opens values under one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: new cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: new gcm: %w", err)
	}
	return &Box{aead: aead}, nil
}

// ParseKey decodes a key given as 64 hex characters or as base64 (standard or URL alphabet, padded
// or not) of exactly 32 bytes. Surrounding whitespace is ignored. A 64-character string made only of
// hex digits is read as hex (it would otherwise be base64 of 48 bytes, never a valid key).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("secretbox: key is empty; want 32 bytes as 64 hex characters or base64")
	}
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	encodings := []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	}
	for _, enc := range encodings {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != KeySize {
			return nil, fmt.Errorf("secretbox: key decodes (base64) to %d bytes, want %d", len(b), KeySize)
		}
		return b, nil
	}
	return nil, fmt.Errorf("secretbox: key is neither 64 hex characters nor base64 of %d bytes (length %d)", KeySize, len(s))
}

// Seal encrypts plaintext with a fresh random nonce.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	out := make([]byte, 1+NonceSize, Overhead+len(plaintext))
	out[0] = Version
	if _, err := rand.Read(out[1 : 1+NonceSize]); err != nil {
		return nil, fmt.Errorf("secretbox: read nonce: %w", err)
	}
	return b.aead.Seal(out, out[1:1+NonceSize], plaintext, out[:1]), nil
}

// Open decrypts a value produced by Seal. Any failure wraps ErrOpen.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the minimum %d", ErrOpen, len(sealed), Overhead)
	}
	if sealed[0] != Version {
		return nil, fmt.Errorf("%w: unknown version %d", ErrOpen, sealed[0])
	}
	pt, err := b.aead.Open(nil, sealed[1:1+NonceSize], sealed[1+NonceSize:], sealed[:1])
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed (wrong key or tampered data)", ErrOpen)
	}
	if pt == nil {
		pt = []byte{}
	}
	return pt, nil
}

// SealJSON marshals v to JSON and seals it.
func (b *Box) SealJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("secretbox: marshal: %w", err)
	}
	return b.Seal(raw)
}

// OpenJSON opens sealed and unmarshals the JSON plaintext into v.
func (b *Box) OpenJSON(sealed []byte, v any) error {
	raw, err := b.Open(sealed)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("secretbox: unmarshal: %w", err)
	}
	return nil
}
