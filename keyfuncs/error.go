package keyfuncs

import "net/http"

// Error tells why a Func could not build an identity. Source and Reason
// never hold a value from the request, so it is safe to show the client; a
// Func may return one shared *Error, so treat it as read-only.
type Error struct {
	Status int    // 400, or 413 for a body over the hashing limit; 0 means 400
	Source string // what was missing or bad, such as `header "X-User-ID"`
	Reason string // what was wrong with Source, such as "missing"
}

// Error returns "keyfuncs: <source>: <reason>".
func (e *Error) Error() string { return "keyfuncs: " + e.Source + ": " + e.Reason }

// HTTPStatus returns the status to answer with: Status, or 400 if unset.
func (e *Error) HTTPStatus() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

func badRequest(source, reason string) *Error {
	return &Error{Status: http.StatusBadRequest, Source: source, Reason: reason}
}

func missing(source string) error { return badRequest(source, "missing") }
