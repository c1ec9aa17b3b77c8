package keyfuncs

import (
	"errors"
	"net/http"
)

// IdempotencyFingerprint is the body fingerprint the adapters store with a
// Replay policy's first response, to refuse (422) a later request that
// reuses its Idempotency-Key for another body. It returns BodyFingerprint
// with DefaultIdempotencyBodyLimit when the request carries an
// Idempotency-Key field, and "" otherwise: a request keyed by its body's
// hash (Idempotent without the header) cannot have another body under the
// same key, so there is nothing to compare and its body is not read twice.
// A body over the limit also gets "" rather than a 413: the key, not the
// fingerprint, decides whether the request may run, and a large upload
// with an Idempotency-Key must still go through; only the reuse check is
// lost for it. A body that fails to read gives the 400 *Error of BodyHash.
func IdempotencyFingerprint(r *http.Request) (string, error) {
	if len(r.Header[idempotencyHeader]) == 0 {
		return "", nil
	}
	if r.ContentLength > DefaultIdempotencyBodyLimit {
		return "", nil
	}
	fp, err := BodyFingerprint(r, DefaultIdempotencyBodyLimit)
	var e *Error
	if errors.As(err, &e) && e.HTTPStatus() == http.StatusRequestEntityTooLarge {
		return "", nil
	}
	return fp, err
}
