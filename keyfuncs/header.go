package keyfuncs

import (
	"net/http"
	"net/textproto"
	"strconv"
)

// Header keys on the first value of the request header name (matched
// case-insensitively), such as an X-User-ID set by an authenticating
// gateway. A missing or empty header gives a 400 *Error with source
// `header "<name>"`: requests without an identity are refused, not lumped
// together under one empty key. Only trust a header your own
// infrastructure sets or strips: a client can put anything in it. Long
// values are fine; the stored key hashes them.
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

// Cookie keys on the value of the cookie name, such as a session ID: the
// key of a browser form, which cannot send a header of its own. A missing,
// empty or malformed cookie (Go's parser drops those) gives a 400 *Error
// with source `cookie "<name>"`. A cookie identifies a browser, not an
// authenticated user, and a client that drops it gets a new key: put it
// after the authenticated user in FirstOf.
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
