package guard

import (
	"net/http"

	"github.com/go-throttle/throttle/keyfuncs"
)

// hashBody is the default fingerprint's body hash: SHA-256 of at most
// 1 MiB, the body put back for the handler; a longer body gets 413 rather
// than being compared in part.
var hashBody = keyfuncs.BodyHash(1 << 20)

// idempotencyFingerprint is the fingerprint a Replay stores by default: the
// body's hash under an Idempotency-Key, "" without one (a key made of the
// body already is one), so that a key reused for another payload gets 422
// rather than the first request's answer.
func idempotencyFingerprint(r *http.Request) (string, error) {
	if len(r.Header["Idempotency-Key"]) == 0 {
		return "", nil
	}
	return hashBody(r)
}
