// Package webhooks owns the signature and headers of every webhook Vigil sends (API.md §9): agent
// event deliveries and the generic approval webhook sign and label their bodies the same way.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a signed delivery.
const (
	HeaderEvent     = "X-Vigil-Event"
	HeaderDelivery  = "X-Vigil-Delivery"
	HeaderTimestamp = "X-Vigil-Timestamp"
	HeaderSignature = "X-Vigil-Signature"
)

// Sign is the signature of a delivery: v1= hex HMAC-SHA256(secret, "{timestamp}.{body}").
func Sign(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature is Sign(secret, timestamp, body), compared in constant time. A
// header may carry several comma-separated signatures (during a secret rotation); any match counts.
func Verify(secret, timestamp string, body []byte, signature string) bool {
	want := []byte(Sign(secret, timestamp, body))
	for _, s := range strings.Split(signature, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(s)), want) {
			return true
		}
	}
	return false
}

// SetHeaders labels and signs req for event and delivery at now.
func SetHeaders(h http.Header, secret, event, delivery string, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEvent, event)
	h.Set(HeaderDelivery, delivery)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, Sign(secret, ts, body))
}
