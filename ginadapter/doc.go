// Package ginadapter guards gin routes with a throttle.Limiter in one line:
//
//	r.POST("/submit", ginadapter.Middleware(limiter, key), submit)
//
// It is the gin face of the same admission the nethttp and echo adapters
// use: the key is built, the request admitted under the limiter's policy,
// and the hold ended when the rest of the chain returns (Window keeps the
// key, Dedupe releases it when the response status is a failure or the
// handler panicked, Exclusive refreshes its lease while the chain runs and
// releases it afterwards). A rejected request is answered with 429 (409 for
// Exclusive), Retry-After and RateLimit headers and an RFC 9457
// application/problem+json body, and the chain is aborted (c.Abort), so no
// later handler runs. Responses, headers and stored keys are identical to
// the other adapters, so gin, echo and net/http services share locks on one
// Redis.
//
// The handler's status is read from c.Writer.Status() after c.Next(); gin
// reports 200 when nothing was written. A panic in a later handler ends the
// hold as a failure and keeps unwinding, so gin.Recovery (registered before
// this middleware, as gin.Default does) still answers 500.
//
// # Keys
//
// Middleware takes a keyfuncs.Func, which works on the *http.Request and so
// builds the same key in every framework. ContextMiddleware takes a KeyFunc
// reading the *gin.Context instead, with gin's own sources: ClientIP,
// Value (c.Get, e.g. a user ID set by an authentication middleware) and
// FullPath (the route pattern); Request adapts any keyfuncs.Func.
//
// ClientIP(e) keys on c.ClientIP and refuses, with an error at start-up,
// an Engine that believes X-Forwarded-For or X-Real-IP from any peer. That
// is gin's default: an Engine trusts every peer as a proxy until
// Engine.SetTrustedProxies is called, and those headers are ones any client
// can set, so keyed on them a client picks a new identity per request and
// is never throttled. Configure the engine first, then build the key:
//
//	r := gin.New()
//	if err := r.SetTrustedProxies([]string{"10.0.0.0/8"}); err != nil { // nil without proxies
//		log.Fatal(err)
//	}
//	key, err := ginadapter.ClientIP(r)
//	if err != nil {
//		log.Fatal(err)
//	}
//	r.POST("/submit", ginadapter.ContextMiddleware(limiter, key), submit)
//
// ClientIP checks the engine as it is when called, so set SetTrustedProxies,
// TrustedPlatform and RemoteIPHeaders before it. A TrustedPlatform such as
// gin.PlatformCloudflare is taken as a deliberate choice and accepted; it is
// safe only when every request reaches the engine through that platform.
//
// keyfuncs.ForwardedIP with an explicit trusted list is the alternative
// that does not depend on the engine: it walks X-Forwarded-For from the
// right and never takes a client-supplied value.
package ginadapter
