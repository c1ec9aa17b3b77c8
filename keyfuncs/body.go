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

const (
	bodySource = "body"
	maxPresize = 32 << 10
)

// BodyHash keys on the SHA-256 of the request body, written as unpadded
// base64url (43 characters, short enough to be stored as is). Joined with a
// user key it recognises the very same submission sent twice (a double
// click, a client retry) while letting different submissions through.
//
// At most maxBytes are hashed, and at most maxBytes+1 read to find out: a
// longer body (or a Content-Length above maxBytes, checked before reading)
// gives a *Error with status 413, so memory stays bounded whatever the
// client sends. The body is put back for the handler in every case, read
// or not, failed or not: r.Body then yields the bytes already read followed
// by the unread rest, and closing it closes the original body. A nil body
// and http.NoBody hash as the empty body. A body that fails to read gives a
// 400, or a 413 if the error is an *http.MaxBytesError.
//
// Up to maxBytes are held in memory per request while the key is built. For
// endpoints that take large uploads, keep maxBytes small and put an
// http.MaxBytesReader in front of the handler to bound what the handler
// itself reads. BodyHash panics if maxBytes is negative.
//
// A client that sends "Expect: 100-continue" holds its body back until the
// server answers 100 Continue, which net/http does when the body is first
// read, so that a request refused on its headers costs no upload. BodyHash
// keeps to that as far as a key made of the body can:
//
//   - a Content-Length over maxBytes gives the 413 *Error before anything
//     is read, so the request is refused without 100 Continue;
//   - any other body is read, and so asked for, also when the request then
//     turns out to be a duplicate, since the body is the identity: nothing
//     else tells a resent submission from a new one. Refusing with 417
//     Expectation Failed instead would save no upload (a client that
//     handles 417 sends the request again, body included, without the
//     expectation; one that does not just fails), so BodyHash does not.
//
// To turn duplicates away without asking for their bodies, key on the
// client's Idempotency-Key first and on the body only when it is missing:
// IdempotencyKey(IdempotencyFallback(BodyHash(n))) reads no body when the
// header is present, and refuses a malformed one rather than hashing the
// body instead (Idempotent adds the user and the route). In a Join, put
// BodyHash last: Join stops at the first
// function that fails, so a request lacking another part of its key, such
// as a user header, is then refused with 400 before its body is asked for.
func BodyHash(maxBytes int64) Func {
	if maxBytes < 0 {
		panic(fmt.Sprintf("keyfuncs: BodyHash(%d): maxBytes must not be negative", maxBytes))
	}
	if maxBytes == math.MaxInt64 {
		maxBytes-- // maxBytes+1 must not overflow
	}
	return func(r *http.Request) (string, error) {
		if r.Body == nil || r.Body == http.NoBody {
			return hashString(nil), nil
		}
		if r.ContentLength > maxBytes {
			return "", tooLarge()
		}
		orig := r.Body
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			// Content-Length is only the client's claim: pre-size for it,
			// but not beyond a modest amount that a client can make us
			// allocate without sending anything.
			buf.Grow(int(min(r.ContentLength+1, maxPresize)))
		}
		_, err := buf.ReadFrom(io.LimitReader(orig, maxBytes+1))
		read := buf.Bytes()
		switch {
		case err != nil:
			r.Body = &restoredBody{Reader: io.MultiReader(bytes.NewReader(read), orig), Closer: orig}
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return "", tooLarge()
			}
			return "", &Error{Status: http.StatusBadRequest, Source: bodySource, Reason: "unreadable"}
		case int64(len(read)) > maxBytes:
			r.Body = &restoredBody{Reader: io.MultiReader(bytes.NewReader(read), orig), Closer: orig}
			return "", tooLarge()
		}
		// The whole body has been read (the limit was not reached, so the
		// original returned EOF).
		r.Body = &restoredBody{Reader: bytes.NewReader(read), Closer: orig}
		return hashString(read), nil
	}
}

func tooLarge() error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Source: bodySource, Reason: "longer than the hashing limit"}
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
