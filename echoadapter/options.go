package echoadapter

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/throttle/guard"
)

// Option configures Middleware and ContextMiddleware.
type Option func(*config)

type config struct {
	reject RejectHandler
	guard  []guard.Option
	skip   func(c echo.Context) bool
}

// WithFingerprint makes f compute the body fingerprint a Replay policy
// stores with a key's first response, exactly as nethttp.WithFingerprint
// (default keyfuncs.IdempotencyFingerprint). Other modes ignore it.
func WithFingerprint(f func(r *http.Request) (string, error)) Option {
	return func(c *config) { c.guard = append(c.guard, guard.WithFingerprint(f)) }
}

// WithRecording sets what a Replay policy records of a key's first
// response, as nethttp.WithRecording. Other modes ignore it.
func WithRecording(r guard.Recording) Option {
	return func(c *config) { c.guard = append(c.guard, guard.WithRecording(r)) }
}

// WithCost makes each request of a Quota policy cost what f says of it
// instead of 1 (its batch length, say), exactly as nethttp.WithCost: an
// error of f is answered as a bad key, a cost above the policy's Burst gets
// 413. f takes the *http.Request, so that one cost function serves every
// framework. Other modes ignore the cost; a nil f keeps it at 1.
func WithCost(f func(r *http.Request) (int, error)) Option {
	return func(c *config) {
		if f != nil {
			c.guard = append(c.guard, guard.WithCost(f))
		}
	}
}

// RejectHandler answers a request that does not go ahead: a duplicate, a
// request whose key could not be built, or one the store could not decide
// under a fail-closed policy. It either writes the response and returns nil,
// or returns an error for the application's HTTPErrorHandler to render
// (see HTTPError). rej.Err is for logs only, never for the client. A
// replayed response (rej.Replay) never reaches it: the middleware sends it
// as recorded.
type RejectHandler func(c echo.Context, rej *guard.Rejection) error

// WithRejectHandler replaces the default rejection response (problem+json
// written directly) by h. A nil h keeps the default.
func WithRejectHandler(h RejectHandler) Option {
	return func(c *config) {
		if h != nil {
			c.reject = h
		}
	}
}

// WithSkipper lets requests for which skip returns true through unguarded,
// like echo's middleware.Skipper (a middleware.Skipper value can be passed
// as is). By default no request is skipped.
func WithSkipper(skip func(c echo.Context) bool) Option {
	return func(c *config) { c.skip = skip }
}

// HTTPError sets the rejection's Retry-After and RateLimit headers on
// c.Response() and returns an *echo.HTTPError with its status and a short
// explanation, for a RejectHandler that lets the application's
// HTTPErrorHandler render rejections like its other errors:
//
//	echoadapter.WithRejectHandler(func(c echo.Context, rej *guard.Rejection) error {
//		return echoadapter.HTTPError(c, rej)
//	})
//
// The error carries no internal error (rej.Err is left out), so that echo's
// debug mode cannot show keys or store errors to the client.
func HTTPError(c echo.Context, rej *guard.Rejection) *echo.HTTPError {
	guard.SetHeaders(c.Response().Header(), rej)
	return echo.NewHTTPError(rej.Status, guard.Detail(rej))
}
