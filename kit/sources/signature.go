package sources

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-soc/vigil/kit/validate"
)

// Auth types of a source integration.
const (
	AuthNone        = "none"
	AuthHMACSHA256  = "hmac_sha256"
	AuthSharedToken = "shared_token"
)

// maxSignatureHeaderLen bounds the header value examined.
const maxSignatureHeaderLen = 1024

// ErrInvalidSignature means the request's signature or token is missing or wrong (API 401
// INVALID_SIGNATURE).
var ErrInvalidSignature = errors.New("invalid signature")

// ErrUnknownAuthType means the integration's auth type is not one of AuthNone, AuthHMACSHA256 or
// AuthSharedToken (a configuration error, not the caller's fault).
var ErrUnknownAuthType = errors.New("unknown auth type")

// ErrMisconfigured means the integration's signature settings contradict each other (a signing auth
// type without a secret, or a secret with auth_type none). Ingest refuses such an integration rather
// than accept unsigned payloads: it fails closed.
var ErrMisconfigured = errors.New("source integration signature configuration is inconsistent")

// CheckAuthConfig reports the contradictions of an integration's signature settings, located at
// auth_config or auth_type: hmac_sha256 and shared_token need a secret; none must not carry one (it
// would be silently ignored). Writes are refused with these errors and VerifySignature refuses to
// verify against them.
func CheckAuthConfig(authType string, hasSecret bool) validate.Errors {
	var errs validate.Errors
	switch {
	case (authType == AuthHMACSHA256 || authType == AuthSharedToken) && !hasSecret:
		errs.AddCtx([]any{"auth_config"}, validate.TypeMissing,
			fmt.Sprintf("auth_type %s needs a secret in auth_config; without one every unsigned payload would be accepted.", authType),
			nil, map[string]any{"auth_type": authType})
	case authType == AuthNone && hasSecret:
		errs.AddCtx([]any{"auth_type"}, validate.TypeValue,
			"A secret is configured but auth_type none would ignore it; choose hmac_sha256 or shared_token, or remove the secret.",
			authType, map[string]any{"expected": AuthHMACSHA256 + ", " + AuthSharedToken})
	}
	return errs
}

// AuthTypes returns the auth types an integration may use.
func AuthTypes() []string { return []string{AuthNone, AuthHMACSHA256, AuthSharedToken} }

// VerifySignature checks one ingest request against a source integration's auth settings.
//
//   - AuthNone: always accepted.
//   - AuthHMACSHA256: header carries hex HMAC-SHA256(secret, body), optionally prefixed "sha256=".
//   - AuthSharedToken: header carries the secret itself.
//
// Inconsistent settings (CheckAuthConfig: a signing type without a secret, a secret with none) yield
// ErrMisconfigured and the request is refused. With a secret, a missing or wrong header value yields
// an error wrapping ErrInvalidSignature. Comparisons are
// constant-time. header is the plugin's SignatureHeader(); headers looks a request header up by name.
func VerifySignature(authType, header, secret string, headers func(string) string, body []byte) error {
	switch authType {
	case AuthNone, AuthHMACSHA256, AuthSharedToken:
	default:
		return fmt.Errorf("%w: %q", ErrUnknownAuthType, authType)
	}
	if errs := CheckAuthConfig(authType, secret != ""); len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrMisconfigured, errs[0].Msg)
	}
	if authType == AuthNone {
		return nil
	}
	got := strings.TrimSpace(headers(header))
	if got == "" {
		return fmt.Errorf("%w: header %s is missing", ErrInvalidSignature, header)
	}
	if len(got) > maxSignatureHeaderLen {
		return fmt.Errorf("%w: header %s is too long", ErrInvalidSignature, header)
	}
	if authType == AuthSharedToken {
		// Hash both sides so the comparison time does not depend on the secret's length.
		a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(secret))
		if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			return fmt.Errorf("%w: token in %s does not match", ErrInvalidSignature, header)
		}
		return nil
	}
	if len(got) > len("sha256=") && strings.EqualFold(got[:len("sha256=")], "sha256=") {
		got = got[len("sha256="):]
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return fmt.Errorf("%w: header %s is not hex", ErrInvalidSignature, header)
	}
	if !hmac.Equal(sig, SignHMAC(secret, body)) {
		return fmt.Errorf("%w: HMAC in %s does not match the body", ErrInvalidSignature, header)
	}
	return nil
}

// SignHMAC returns HMAC-SHA256(secret, body); hex-encode it to produce a signature header (tests,
// documentation examples, and senders written in Go).
func SignHMAC(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}
