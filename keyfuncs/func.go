package keyfuncs

import "net/http"

// Func returns the identity a request is throttled under, such as a user ID
// or a client IP. The middleware combines it with the policy name into the
// stored key, escaping and bounding it on the way. A Func that cannot build
// an identity returns an error, typically a *Error, and the request is
// refused rather than throttled under some shared fallback key.
type Func func(r *http.Request) (string, error)

// Static keys every request on s. Alone it makes one lock for the whole
// policy (one costly report at a time across the fleet); joined with other
// funcs it labels a part of the key. It never fails.
func Static(s string) Func {
	return func(*http.Request) (string, error) { return s, nil }
}
