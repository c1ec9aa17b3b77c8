package main

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafehttp"

	"github.com/go-throttle/throttle/throttle/overload"
)

// A case is one way to guard the report handler: a middleware, and the
// limit it holds now (nil when it has none to read).
type guardCase struct {
	name  string
	make  func(next http.Handler) (h http.Handler, limit func() int)
	notes string
}

// cases are the guards compared, in the order of the tables.
var cases = []guardCase{
	{"none", func(next http.Handler) (http.Handler, func() int) { return next, nil },
		"no limiter: every request waits for a slot"},
	{"fixed-20", fixed(20), "at most 20 in flight, the rest 503 at once (too high: 5× the slots)"},
	{"fixed-2", fixed(2), "at most 2 in flight, the rest 503 at once (too low: half the slots)"},
	{"failsafe-go", failsafe(false), "failsafe-go v0.9.8 adaptivelimiter, defaults, through failsafehttp"},
	{"failsafe-go-queue", failsafe(true), "the same with WithQueueing(2, 3), as BuildPrioritized sets it"},
	{"throttle", throttleCase, "throttle/overload, the zero Config"},
}

// fixed returns a case with a fixed limit of n in flight and no queue.
func fixed(n int) func(next http.Handler) (http.Handler, func() int) {
	return func(next http.Handler) (http.Handler, func() int) {
		sem := make(chan struct{}, n)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case sem <- struct{}{}:
			default:
				unavailable(w, time.Second)
				return
			}
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		}), func() int { return n }
	}
}

// failsafe returns failsafe-go's adaptive limiter with its defaults,
// queueing or not, through its own net/http handler (which answers 429
// when the limit is exceeded).
func failsafe(queue bool) func(next http.Handler) (http.Handler, func() int) {
	return func(next http.Handler) (http.Handler, func() int) {
		b := adaptivelimiter.NewBuilder[*http.Response]()
		if queue {
			b = b.WithQueueing(2, 3)
		}
		l := b.Build()
		return failsafehttp.NewHandler(next, l), l.Limit
	}
}

// throttleCase is throttle's overload limiter as a middleware, as the
// adapters will wire it: 503 with Retry-After for a refusal.
func throttleCase(next http.Handler) (http.Handler, func() int) {
	l, err := overload.New(overload.Config{Name: "report"})
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := l.Acquire(r.Context(), overload.Normal)
		var rf *overload.Refusal
		switch {
		case errors.As(err, &rf):
			unavailable(w, rf.RetryAfter)
			return
		case err != nil: // the client left while it waited
			return
		}
		next.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			p.Drop()
		} else {
			p.End()
		}
	}), func() int { return l.Stats().Limit }
}

// unavailable answers 503 with Retry-After in whole seconds.
func unavailable(w http.ResponseWriter, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10))
	w.WriteHeader(http.StatusServiceUnavailable)
}
