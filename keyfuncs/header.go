package keyfuncs

import (
	"net/http"
	"net/textproto"
	"strconv"
)

// Header keys on the first value of the request header name, such as an
// X-User-ID set by an authenticating gateway or an Idempotency-Key sent by
// the client. The name is matched case-insensitively (it is canonicalised
// once, here, not per request). A missing or empty header gives
// *Error{400, `header "<name>"`, "missing"}: requests without an identity
// are rejected, not lumped together under one empty key.
//
// Only trust a header your own infrastructure sets or strips, or one that
// identifies what the client itself asks for (an idempotency key): a client
// can put anything in it. Long values are fine; the stored key hashes them
// (see throttle.Key).
func Header(name string) Func {
	key := textproto.CanonicalMIMEHeaderKey(name)
	errMissing := missing("header " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		if v := r.Header[key]; len(v) > 0 && v[0] != "" {
			return v[0], nil
		}
		return "", errMissing
	}
}

// Cookie keys on the value of the cookie name, such as a session ID. A
// missing or empty cookie gives a 400 *Error with source `cookie "<name>"`.
// The value is taken as sent; Go's cookie parser drops malformed cookies,
// which then count as missing. (A long value is hashed into the stored key,
// see store.MaxComponent, so it costs no more than a short one.)
//
// It is the key of a browser form, which cannot send a header of its own:
// a cookie set by the page identifies the browser in every tab. A cookie is
// chosen by the client, though: it identifies a browser, not an
// authenticated user, and a client that drops it or sends a new one each
// time gets a new key. Key on a session's authenticated user (ContextValue)
// where there is one, and put Cookie after it in FirstOf.
func Cookie(name string) Func {
	errMissing := missing("cookie " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		c, err := r.Cookie(name)
		if err != nil || c.Value == "" {
			return "", errMissing
		}
		return c.Value, nil
	}
}
