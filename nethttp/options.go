package nethttp

import (
	"net/http"

	"github.com/go-throttle/throttle/throttle/guard"
)

// Option configures Middleware.
type Option func(*config)

type config struct {
	reject RejectHandler
}

// RejectHandler answers a request that does not go ahead: a duplicate, a
// request whose key could not be built, or one the store could not decide
// under a fail-closed policy. rej.Status is the status the default answer
// would use; rej.Err is for logs only, never for the client. A replayed
// response (rej.Replay) never reaches it: the middleware sends it as
// recorded.
type RejectHandler func(w http.ResponseWriter, r *http.Request, rej *guard.Rejection)

// WithRejectHandler replaces the default rejection response (problem+json
// with Retry-After and RateLimit headers) by h, for services that have their
// own error format. h is called instead of the guarded handler and must
// write the whole response; guard.SetHeaders(w.Header(), rej) adds the
// standard Retry-After and RateLimit fields. A nil h keeps the default.
func WithRejectHandler(h RejectHandler) Option {
	return func(c *config) {
		if h != nil {
			c.reject = h
		}
	}
}
