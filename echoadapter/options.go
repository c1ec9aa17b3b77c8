package echoadapter

import (
	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/throttle/guard"
)

// Option configures Middleware and ContextMiddleware.
type Option func(*config)

type config struct {
	reject RejectHandler
	skip   func(c echo.Context) bool
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
