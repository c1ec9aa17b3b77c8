package keyfuncs

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
)

var (
	errBodyTooLarge   = &Error{Status: http.StatusRequestEntityTooLarge, Source: "body", Reason: "longer than the hashing limit"}
	errBodyUnreadable = badRequest("body", "unreadable")
)

// BodyHash keys on the SHA-256 of the request body, as unpadded base64url
// (43 characters). Joined with a user key it recognises the very same
// submission sent twice (a double click, a client retry) while letting
// different submissions through.
//
// At most maxBytes are hashed and held in memory: a longer body, or a
// Content-Length over maxBytes (checked before reading, so a client that
// sent "Expect: 100-continue" is refused without uploading), gives a 413
// *Error. A body that fails to read gives a 400, or a 413 for an
// *http.MaxBytesError. The body is put back for the handler in every case:
// r.Body yields the bytes read, then the unread rest, and closing it closes
// the original. A nil body and http.NoBody hash as the empty body.
//
// Any other body is read, and so asked for, even when the request turns out
// to be a duplicate: nothing else tells a resent submission from a new one.
// To turn duplicates away without reading their bodies, key on the
// client's Idempotency-Key and on the body only without it (IdempotencyKey
// with IdempotencyFallback(BodyHash(n))), and put BodyHash last in a Join,
// which stops at the first func that fails. BodyHash panics if maxBytes is
// negative.
func BodyHash(maxBytes int64) Func {
	if maxBytes < 0 {
		panic(fmt.Sprintf("keyfuncs: BodyHash(%d): maxBytes must not be negative", maxBytes))
	}
	maxBytes = min(maxBytes, math.MaxInt64-1) // maxBytes+1 is read
	return func(r *http.Request) (string, error) {
		switch {
		case r.Body == nil || r.Body == http.NoBody:
			return hashString(nil), nil
		case r.ContentLength > maxBytes:
			return "", errBodyTooLarge
		}
		return hashBody(r, maxBytes)
	}
}

// hashBody reads up to maxBytes+1 bytes of r.Body, puts them back in front
// of the rest, and hashes them when that was the whole body.
func hashBody(r *http.Request, maxBytes int64) (string, error) {
	orig := r.Body
	var buf bytes.Buffer
	_, err := buf.ReadFrom(io.LimitReader(orig, maxBytes+1))
	read := buf.Bytes()
	whole := err == nil && int64(len(read)) <= maxBytes
	if whole { // the original returned EOF: nothing is left to read
		r.Body = &restoredBody{Reader: bytes.NewReader(read), Closer: orig}
		return hashString(read), nil
	}
	r.Body = &restoredBody{Reader: io.MultiReader(bytes.NewReader(read), orig), Closer: orig}
	var mbe *http.MaxBytesError
	if err != nil && !errors.As(err, &mbe) {
		return "", errBodyUnreadable
	}
	return "", errBodyTooLarge
}

func hashString(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// restoredBody gives back a request body that was partly or fully read,
// and closes the original body when closed.
type restoredBody struct {
	io.Reader
	io.Closer
}

// BodyFingerprint returns the SHA-256 of r's body as BodyHash(maxBytes)
// computes it, with the same limits and errors, and the body put back. It
// is the idempotency fingerprint of the draft: stored with the response to
// the first request under an idempotency key, it tells a later request
// that reuses the key for another payload, which the draft says to refuse
// with 422 rather than answer with a response that does not belong to it.
func BodyFingerprint(r *http.Request, maxBytes int64) (string, error) {
	return BodyHash(maxBytes)(r)
}

// IdempotencyFingerprint is the fingerprint the adapters store with a
// Replay policy's first response: BodyFingerprint with
// DefaultIdempotencyBodyLimit when the request carries an Idempotency-Key
// field, and "" otherwise (a request keyed by its body's hash cannot bring
// another body under the same key, so its body is not read twice). A body
// over the limit gets the 413 *Error, as a request whose body cannot be
// compared must not be answered with another request's response; a route
// that takes larger bodies passes its own fingerprint with a larger limit.
func IdempotencyFingerprint(r *http.Request) (string, error) {
	if len(r.Header[idempotencyHeader]) == 0 {
		return "", nil
	}
	return BodyFingerprint(r, DefaultIdempotencyBodyLimit)
}
