package adaptertest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Adapter describes one middleware adapter to the suite. Every function
// returns the framework's own engine, serving h for every method and path.
type Adapter struct {
	// Name names the adapter in test output.
	Name string

	// Wrap puts h behind the adapter's middleware for g and key, with
	// default options. The suite builds g with guard.Lock, guard.Quota or
	// guard.Replay, with the guard's options (a cost, CountOnlyFailures)
	// where a test needs them.
	Wrap func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler

	// WrapCustom is Wrap with the adapter's own rejection handler option
	// answering every rejection, in the framework's idiom, with status
	// CustomStatus and the header fields CustomAnswer gives, as a handler
	// rendering its own page ("try again in N s") would.
	WrapCustom func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler

	// Routes serves each handler of routes on a route of its own of the
	// framework's router, for every method: the map's keys are the
	// routes' paths, plain ("/orders"), each handler behind the adapter's
	// middleware for g and key with default options, so that the
	// middleware sees the route the router matched. The suite skips the
	// cases that need it when it is nil.
	Routes func(g *guard.Guard, key keyfuncs.Func, routes map[string]http.Handler) http.Handler

	// Bare serves h on the same engine without the middleware, the
	// baseline of the benchmarks.
	Bare func(h http.Handler) http.Handler

	// Noop serves h on the same engine behind a middleware of the
	// framework's own kind that does nothing but call the next handler:
	// the benchmarks' baseline for what any middleware costs. It is
	// optional; the benchmarks skip it when nil.
	Noop func(h http.Handler) http.Handler

	// Buffered says that the framework buffers every response whole, so
	// that a handler's flush streams nothing and its response is recorded
	// for Replay like any other: the suite skips its flushed-response case.
	Buffered bool

	// Request is nil for an adapter on net/http's types. One whose
	// requests are not *http.Request (fiber) puts its own in
	// flow.Call.Request, which guard.Skip, guard.WithCost and a Quota's
	// rate functions of an *http.Request cannot read: Request converts it,
	// and the suite gives its functions as flow.Skip, flow.WithCost
	// (guard.WithFlow) and rates of the flow.Call, as such an adapter's
	// users do.
	Request func(c flow.Call) *http.Request
}

// skip is the guard option that skips the requests f returns true for.
func (a Adapter) skip(f func(*http.Request) bool) guard.Option {
	if a.Request == nil {
		return guard.Skip(f)
	}
	return guard.WithFlow(flow.Skip(func(c flow.Call) bool { return f(a.Request(c)) }))
}

// cost is the guard option that charges each request what f says.
func (a Adapter) cost(f func(*http.Request) (int, error)) guard.Option {
	if a.Request == nil {
		return guard.WithCost(f)
	}
	return guard.WithFlow(flow.WithCost(func(c flow.Call) (int, error) { return f(a.Request(c)) }))
}

// perRequest is the guard of q under the rate f gives each request.
func perRequest(a Adapter, q *throttle.Quota, f func(*http.Request, string) throttle.Rate) *guard.Guard {
	if a.Request == nil {
		return guard.Quota(q, f)
	}
	return guard.Quota(q, func(c flow.Call) throttle.Rate { return f(a.Request(c), c.ID) })
}

// The answer the WrapCustom rejection handlers give.
const (
	CustomStatus = http.StatusTeapot
	CustomHeader = "X-Rejected" // rej.Reason
	// CustomRetry is rej.RetryAfter in seconds; CustomRemaining and
	// CustomReset the first policy's Remaining and Reset in seconds, when
	// the RateLimit field is sent.
	CustomRetry     = "X-Retry-In"
	CustomRemaining = "X-Remaining"
	CustomReset     = "X-Reset"
)

// CustomAnswer returns the header fields the WrapCustom rejection handlers
// answer with, made from rej's values rather than the header fields the
// middleware set: the suite checks that both say the same.
func CustomAnswer(rej *guard.Rejection) map[string]string {
	m := map[string]string{CustomHeader: string(rej.Reason), CustomRetry: strconv.Itoa(int(rej.RetryAfter / time.Second))}
	if first := rej.Limits.First(); first.Remaining >= 0 {
		m[CustomRemaining] = strconv.Itoa(first.Remaining)
		m[CustomReset] = strconv.Itoa(int(first.Reset / time.Second))
	}
	return m
}

// UserHeader carries the user identity in the suite's requests.
const UserHeader = "X-User-ID"

// BadKeyType is the problem type of a request whose key could not be
// built: a link to guard.ReasonBadKey's documentation.
const BadKeyType = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonBadKey"

// NotKeptType is the problem type of a Replay duplicate whose original's
// response was not kept: a link to guard.ReasonNotKept's documentation.
const NotKeptType = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonNotKept"

// UserKey keys on UserHeader.
func UserKey() keyfuncs.Func { return keyfuncs.Header(UserHeader) }

// ExampleKey is the key the example services use: the user header, or the
// client IP when it is absent.
func ExampleKey() keyfuncs.Func {
	return keyfuncs.FirstOf(keyfuncs.Header(UserHeader), keyfuncs.RemoteIP())
}
