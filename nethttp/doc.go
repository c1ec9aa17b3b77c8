// Package nethttp guards net/http handlers with a throttle.Limiter, one
// line of middleware per route:
//
//	limiter, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	mux.Handle("POST /submit", nethttp.Middleware(limiter, key)(submit))
//
// A second POST /submit from the same user within five seconds gets 429 Too
// Many Requests and never reaches submit.
//
// The middleware builds the request's identity with a keyfuncs.Func, admits
// the request under the limiter's policy, and ends the hold when the handler
// returns: Cooldown keeps the key for its window, Dedupe releases it when the
// handler failed (status >= 400 by default) or panicked, Exclusive refreshes
// its lease while the handler runs and releases it afterwards; a Quota
// charges the request (WithCost for a cost other than 1). Every response of
// a guarded route carries the RateLimit-Policy and RateLimit headers, so
// that clients can pace themselves. A rejected request never reaches the
// handler; it gets 429 (409 for Exclusive) with Retry-After, the RateLimit
// headers and an RFC 9457
// application/problem+json body that names no key, token, address or
// internal error. A key that cannot be built gets 400 (413 for an over-long
// body) in the same form, and a failing store is handled as the policy's
// WhenStoreFails says (fail open, 503, or a fallback store).
//
// All of that policy lives in the throttle core and is shared with the gin
// and echo adapters, so the three answer alike and, with the same keyfuncs
// and policy, build the same stored keys: services written in different
// frameworks share locks on one Redis.
//
// To read the handler's status the middleware wraps the ResponseWriter. The
// wrapper keeps http.Flusher, http.Hijacker and io.ReaderFrom, and has an
// Unwrap method so that http.ResponseController reaches the server's writer
// for deadlines and full duplex. A handler that writes nothing counts as 200.
package nethttp
