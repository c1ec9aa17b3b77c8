package guard

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// Reason says why a request was turned away.
type Reason uint8

const (
	// ReasonContended: another request holds the key (429, or 409 for
	// Exclusive, or the policy's RejectStatus).
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

// String returns the reason's name, for logs and metrics.
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
// ahead. Write renders it as RFC 9457 problem+json with Retry-After and
// RateLimit headers; the adapters hand it to the application's own rejection
// handler instead when one is set.
type Rejection struct {
	// Status is the HTTP status to answer with.
	Status int
	// Reason says why the request was turned away.
	Reason Reason
	// RetryAfter is how long the client should wait before trying again:
	// the holder's remaining time for ReasonContended, one second for
	// ReasonStoreUnavailable, 0 when there is nothing to wait for, and -1
	// when the key is held without an expiry (by something other than
	// throttle).
	RetryAfter time.Duration
	// Policy is the policy's name, for the RateLimit headers.
	Policy string
	// Mode is the policy's mode.
	Mode throttle.Mode
	// Window is the policy's TTL: its Window, or its LeaseTTL for
	// Exclusive.
	Window time.Duration
	// Err is the underlying error, for logs only: it may name keys and
	// internals, so it is never sent to the client.
	Err error
}

// newRejection fills the policy's part of a rejection.
func newRejection(l *throttle.Limiter, status int, reason Reason, err error) *Rejection {
	p := l.Policy()
	return &Rejection{Status: status, Reason: reason, Policy: p.Name, Mode: p.Mode, Window: p.TTL(), Err: err}
}

// rejection turns an error of Limiter.Admit into the answer for the client.
func rejection(l *throttle.Limiter, err error) *Rejection {
	var ce *throttle.ContendedError
	switch {
	case errors.As(err, &ce):
		r := newRejection(l, l.Policy().RejectStatus, ReasonContended, err)
		r.RetryAfter = ce.RetryAfter
		return r
	case errors.Is(err, throttle.ErrStore):
		r := newRejection(l, http.StatusServiceUnavailable, ReasonStoreUnavailable, err)
		r.RetryAfter = time.Second
		return r
	}
	// The caller's context ended: nobody is listening any more.
	return newRejection(l, http.StatusServiceUnavailable, ReasonCanceled, err)
}

// BadKey answers a request whose key could not be built: 400, or the 4xx
// status the key function's error carries (a *keyfuncs.Error says 413 for a
// body too long to hash). Adapters call it when their key function fails, so
// that such a request is never put under one key shared with others.
func BadKey(l *throttle.Limiter, err error) *Rejection {
	status := http.StatusBadRequest
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		if s := hs.HTTPStatus(); s >= 400 && s < 500 {
			status = s
		}
	}
	return newRejection(l, status, ReasonBadKey, err)
}
