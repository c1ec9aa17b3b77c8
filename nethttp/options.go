package nethttp

import (
	"net/http"

	"github.com/go-throttle/throttle/throttle/guard"
)

// Option configures Middleware.
type Option func(*config)

type config struct {
	reject RejectHandler
	guard  []guard.Option
}

// WithFingerprint makes f compute the body fingerprint a Replay policy
// stores with the first response of a key, so that a later request reusing
// the key with another body gets 422 instead of a response that is not its
// own. The default, keyfuncs.IdempotencyFingerprint, hashes the body of
// requests that carry an Idempotency-Key field. f returning "" skips the
// check; an error of f is answered as a bad key. Other modes ignore it.
func WithFingerprint(f func(r *http.Request) (string, error)) Option {
	return func(c *config) { c.guard = append(c.guard, guard.WithFingerprint(f)) }
}

// WithRecording sets what a Replay policy records of a key's first
// response and replays to its duplicates (headers, body size); see
// guard.Recording for the defaults. Other modes ignore it.
func WithRecording(r guard.Recording) Option {
	return func(c *config) { c.guard = append(c.guard, guard.WithRecording(r)) }
}

// WithCost makes each request of a Quota policy cost what f says instead
// of 1: its batch length, or its body size in kilobytes, say. An error of
// f is answered as a bad key (400, or the 4xx its HTTPStatus method gives);
// a cost above the policy's Burst gets 413, since no wait would let it
// through. f runs after the key function and before the store is asked.
// Other modes ignore the cost. A nil f keeps the cost at 1.
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
