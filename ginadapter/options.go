package ginadapter

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/throttle/guard"
)

// Option configures Middleware and ContextMiddleware.
type Option func(*config)

type config struct {
	reject RejectHandler
	guard  []guard.Option
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
