package keyfuncs

import "net/http"

// Error is returned by a Func that cannot build an identity from a request:
// a header is missing, a body is longer than the hashing limit, a peer
// address cannot be parsed. The middleware answers it with Status.
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

func (e *Error) Error() string { return "keyfuncs: " + e.Source + ": " + e.Reason }

// HTTPStatus returns the status the middleware answers with.
func (e *Error) HTTPStatus() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

func missing(source string) error {
	return &Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
}
