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

var errBodyTooLarge = &Error{Status: http.StatusRequestEntityTooLarge, Source: "body", Reason: "longer than the hashing limit"}

// BodyHash keys on the SHA-256 of the body (unpadded base64url): with a
// user, it tells the same submission sent twice. A body, or Content-Length
// (checked before an "Expect: 100-continue" upload), over maxBytes gives a
// 413 *Error; the body is put back for the handler whatever happens. Put
// it last in a Join, which stops at the first error. It panics if maxBytes
// is negative.
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
			return "", badRequest("body", "unreadable")
		}
		return "", errBodyTooLarge
	}
}

func hashString(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

type restoredBody struct {
	io.Reader
	io.Closer
}
