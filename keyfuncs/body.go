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
// (43 characters): joined with a user, it recognises the very same
// submission sent twice while letting different ones through.
//
// At most maxBytes are read and held: a longer body, or a Content-Length
// over maxBytes (checked first, so that an "Expect: 100-continue" client
// is refused before it uploads), gives a 413 *Error; a body that fails to
// read, a 400 (413 for an *http.MaxBytesError). The body is put back for
// the handler whatever happens, and closing it closes the original. Any
// other body is read, so asked for, even from a duplicate: nothing else
// tells it from a new submission. Put BodyHash last in a Join, or behind
// an Idempotency-Key (IdempotencyFallback), to read fewer bodies. It
// panics if maxBytes is negative.
func BodyHash(maxBytes int64) Func {
	if maxBytes < 0 {
		panic(fmt.Sprintf("keyfuncs: BodyHash(%d): maxBytes must not be negative", maxBytes))
	}
	maxBytes = min(maxBytes, math.MaxInt64-1) // maxBytes+1 are read
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
// of the rest, and hashes them if they were the whole body.
func hashBody(r *http.Request, maxBytes int64) (string, error) {
	orig := r.Body
	var buf bytes.Buffer
	_, err := buf.ReadFrom(io.LimitReader(orig, maxBytes+1))
	read := buf.Bytes()
	if err == nil && int64(len(read)) <= maxBytes { // orig is at EOF
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

type restoredBody struct {
	io.Reader
	io.Closer
}

// BodyFingerprint is BodyHash(maxBytes) applied to r: the draft's
// idempotency fingerprint. Stored with the first response under an
// idempotency key, it tells a later request that reuses the key for another
// payload, which the draft refuses with 422 rather than replaying a
// response that does not belong to it.
func BodyFingerprint(r *http.Request, maxBytes int64) (string, error) {
	return BodyHash(maxBytes)(r)
}

// IdempotencyFingerprint is the fingerprint the adapters store with a
// Replay response: BodyFingerprint with DefaultIdempotencyBodyLimit under
// an Idempotency-Key field, "" without one (a request keyed on its body's
// hash cannot bring another body, so it is not read twice). A body over
// the limit gets the 413, since a body that cannot be compared must not be
// answered with another request's response.
func IdempotencyFingerprint(r *http.Request) (string, error) {
	if len(r.Header[idempotencyHeader]) == 0 {
		return "", nil
	}
	return BodyFingerprint(r, DefaultIdempotencyBodyLimit)
}
