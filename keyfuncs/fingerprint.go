package keyfuncs

import "net/http"

// IdempotencyFingerprint is the body fingerprint the adapters store with a
// Replay policy's first response, to refuse (422) a later request that
// reuses its Idempotency-Key for another body. It returns BodyFingerprint
// with DefaultIdempotencyBodyLimit when the request carries an
// Idempotency-Key field, and "" otherwise: a request keyed by its body's
// hash (Idempotent without the header) cannot have another body under the
// same key, so there is nothing to compare and its body is not read twice.
//
// A body over the limit gets the 413 *Error of BodyHash: a fingerprint of
// part of the body could not tell two bodies apart, and a request whose
// body cannot be compared must not be answered with another request's
// response. A route that takes larger bodies under an Idempotency-Key
// passes its own fingerprint with a larger limit (guard's
// WithFingerprint and the adapters' options). A body that fails to read
// gives the 400 *Error of BodyHash.
func IdempotencyFingerprint(r *http.Request) (string, error) {
	if len(r.Header[idempotencyHeader]) == 0 {
		return "", nil
	}
	return BodyFingerprint(r, DefaultIdempotencyBodyLimit)
}
