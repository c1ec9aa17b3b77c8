package keyfuncs

import "net/http"

// Error is returned by a Func that cannot build an identity from a request:
// a header is missing, a body is longer than the hashing limit, a peer
// address cannot be parsed. The middleware answers it with Status.
//
// A Func may return the same *Error for every request that fails the same
// way (a missing header is common on anonymous traffic, and sharing the
// value saves an allocation each time): treat it as read-only.
type Error struct {
	// Status is the HTTP status to answer with: 400 Bad Request, or 413
	// Content Too Large for an over-long body.
	Status int
	// Source names what was missing or bad, such as `header "X-User-ID"`.
	// It is safe to log and to show the client; it never holds the
	// request's own values.
	Source string
	// Reason says what was wrong with Source, such as "missing".
	Reason string
}

// Error returns "keyfuncs: <source>: <reason>", safe to log and to show the
// client since neither part holds a value from the request.
func (e *Error) Error() string { return "keyfuncs: " + e.Source + ": " + e.Reason }

// HTTPStatus returns the status the middleware answers with.
func (e *Error) HTTPStatus() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

// missing returns the error for an absent or empty source. Funcs build it
// once, when they are made, and return it for every request.
func missing(source string) error {
	return &Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
}
