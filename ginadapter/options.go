package ginadapter

import (
	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/throttle/guard"
)

// Option configures Middleware and ContextMiddleware.
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
type RejectHandler func(c *gin.Context, rej *guard.Rejection)

// WithRejectHandler replaces the default rejection response by h, for
// services with their own error format. h should write the response, in
// the gin idiom, with c.AbortWithStatusJSON or c.JSON; the middleware calls
// c.Abort after h returns in any case, so that no later handler runs for a
// rejected request. No header is set before h runs; call
// guard.SetHeaders(c.Writer.Header(), rej) for the standard Retry-After and
// RateLimit fields. A nil h keeps the default.
func WithRejectHandler(h RejectHandler) Option {
	return func(c *config) {
		if h != nil {
			c.reject = h
		}
	}
}
