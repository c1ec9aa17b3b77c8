package keyfuncs

import "net/http"

// Func returns the identity a request is throttled under: the part of the
// key that says who (and what) it is, such as a user ID or a client IP. The
// middleware combines it with the policy name into the stored key (see
// throttle.Key), escaping and bounding it on the way.
//
// A Func that cannot build an identity returns an error, typically a
// *Error; the request is then rejected with a client error instead of
// being throttled under some shared fallback key.
type Func func(r *http.Request) (string, error)
