package throttle

import "time"

// Reason says why a request was rejected.
type Reason uint8

const (
	// ReasonContended: another request holds the key (429 or 409).
	ReasonContended Reason = iota + 1
	// ReasonBadKey: the key could not be built from the request (400, or
	// 413 when the body was too long to hash).
	ReasonBadKey
	// ReasonStoreUnavailable: the store failed and the policy fails closed
	// (503).
	ReasonStoreUnavailable
	// ReasonCanceled: the request's context ended before a decision was
	// made; the client is gone, so nobody reads the answer.
	ReasonCanceled
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case ReasonContended:
		return "contended"
	case ReasonBadKey:
		return "bad-key"
	case ReasonStoreUnavailable:
		return "store-unavailable"
	case ReasonCanceled:
		return "canceled"
	}
	return "unknown"
}

// Rejection is everything needed to answer a request that does not go
// ahead. Adapters render it as RFC 9457 problem+json with Retry-After and
// RateLimit headers, or hand it to the application's own rejection handler.
type Rejection struct {
	// Status is the HTTP status to answer with.
	Status int
	// Reason says why the request was rejected.
	Reason Reason
	// RetryAfter is how long the client should wait before trying again:
	// the holder's remaining time for ReasonContended, one second for
	// ReasonStoreUnavailable, 0 when there is nothing to wait for and -1
	// when the key is held without expiry.
	RetryAfter time.Duration
	// Policy is the policy's name, for the RateLimit headers.
	Policy string
	// Mode is the policy's mode.
	Mode Mode
	// Window is the policy's window (its lease for Exclusive).
	Window time.Duration
	// Err is the underlying error, for logs only: it may name keys and
	// internals, so it is never sent to the client.
	Err error
}
