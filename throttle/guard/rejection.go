package guard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// Reason says why a request was turned away, for logs, metrics and custom
// rejection handlers: the status alone does not tell a duplicate from a
// policy's custom RejectStatus, or a store outage from a client that left.
type Reason uint8

const (
	// ReasonContended means another request holds the key: the policy's
	// RejectStatus (429, or 409 for Exclusive).
	ReasonContended Reason = iota + 1
	// ReasonBadKey means the key could not be built from the request: 400,
	// or the 4xx the key function's error carries (413 for a body too long
	// to hash).
	ReasonBadKey
	// ReasonStoreUnavailable means the store failed and the policy fails
	// closed: 503.
	ReasonStoreUnavailable
	// ReasonCanceled means the request's context ended before a decision:
	// the client is gone, so the answer (503) is for logs, not for it.
	ReasonCanceled
)

// String returns the reason's name, such as "bad-key": a stable label for
// logs and metrics.
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
// ahead, decided once here so that every adapter answers alike. Write renders
// it as RFC 9457 problem+json with Retry-After and RateLimit headers; an
// adapter hands it to the application's own rejection handler instead when
// one is set, so that services with their own error format keep the same
// statuses and headers.
type Rejection struct {
	// Status is the HTTP status to answer with; see Reason for which.
	Status int
	// Reason says why the request was turned away.
	Reason Reason
	// RetryAfter is how long the client should wait before trying again:
	// the holder's remaining time for ReasonContended, one second for
	// ReasonStoreUnavailable, 0 when there is nothing to wait for, and -1
	// when the key is held without an expiry (by something other than
	// throttle).
	RetryAfter time.Duration
	// Policy is the policy's name, for the RateLimit headers and for logs.
	Policy string
	// Mode is the policy's mode: Exclusive limits concurrency rather than a
	// rate, which changes Detail and the RateLimit-Policy header.
	Mode throttle.Mode
	// Window is the policy's TTL (its Window, or its LeaseTTL for
	// Exclusive), for the RateLimit-Policy header and for a Retry-After
	// when the holder's key has no expiry.
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
	case !errors.Is(err, throttle.ErrStore) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// The caller's context ended: nobody is listening any more. (A
		// store call that ran past Policy.Timeout is ErrStore, below.)
		return newRejection(l, http.StatusServiceUnavailable, ReasonCanceled, err)
	}
	// ErrStore under a fail-closed policy, or anything Admit may return
	// one day that is not the client's doing: unavailable, no internals.
	r := newRejection(l, http.StatusServiceUnavailable, ReasonStoreUnavailable, err)
	r.RetryAfter = time.Second
	return r
}

// BadKey answers a request whose key could not be built: 400, or the 4xx
// status the key function's error carries through an HTTPStatus method (a
// *keyfuncs.Error says 413 for a body too long to hash); any other status is
// ignored, since the request, not the server, is at fault. Adapters call it
// when their key function fails, so that such a request is answered alike
// everywhere and never put under one key shared with others. It does not
// touch the store.
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
