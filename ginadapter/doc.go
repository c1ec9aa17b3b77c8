// Package ginadapter guards gin routes with a throttle.Limiter, one line of
// middleware per route:
//
//	limiter, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	r.POST("/submit", ginadapter.Middleware(limiter, key), submit)
//
// A second POST /submit from the same user within five seconds gets 429 Too
// Many Requests and the chain is aborted before submit.
//
// It is the gin face of the same admission the nethttp and echo adapters
// use: the key is built, the request admitted under the limiter's policy,
// and the hold ended when the rest of the chain returns (Cooldown keeps the
// key, Dedupe releases it when the handler failed or panicked, Exclusive
// refreshes its lease while the chain runs and releases it afterwards; a
// Quota charges the request). Every response carries the RateLimit headers.
// A rejected request is answered with 429 (409 for Exclusive), Retry-After
// and the RateLimit headers and an RFC 9457
// application/problem+json body, and the chain is aborted (c.Abort), so no
// later handler runs. Responses, headers and stored keys are identical to
// the other adapters, so gin, echo and net/http services share locks on one
// Redis.
//
// # Status of the handler
//
// When c.Next returns, the hold is ended with the status the client gets,
// which Policy.Failed judges for Dedupe (by default 400 and above is a
// failure, and the key is released so that the user can try again). That
// is c.Writer.Status(): the status written, 200 when nothing was.
//
// Errors recorded with c.Error change that while the response is still
// unwritten. The gin idiom is for a handler to call c.Error and return,
// and for an error middleware registered before this one to answer once
// c.Next returns, after the hold has ended: judged by the unwritten 200,
// the request would keep its key, and the user would get a 500 and then
// 429 on retry. So when the chain returns with c.Errors non-empty and no
// header written yet, the request counts as failed, with the status set by
// c.Status if that is 400 or above (c.Status(http.StatusConflict) and then
// c.Error, so that a Policy.Failed that keeps keys on client errors still
// has its say), and 500 otherwise: a gin.Error carries no status, and 500
// is what such middleware answers. With no middleware to render the error,
// gin sends 200 with an empty body, and the key is released all the same,
// since the handler said that it failed.
//
// Every error type counts, and errors recorded by middleware that ran
// before this one count too, as the error middleware sees them all:
// ErrorTypePrivate (c.Error's default) and ErrorTypePublic only say
// whether the message may be shown to the client, not whether the request
// failed; ErrorTypeBind comes with the 400 that c.Bind writes; and
// ErrorTypeRender means that the response could not be rendered.
//
// A written response stands, errors or not: the client has its status. A
// handler that answers 201 and calls c.Error only to have something logged
// keeps its key, whichever of the two it does first. Note that c.Status
// alone writes nothing (gin sends the header with the first byte of the
// body, or when the whole chain has returned), so a handler answering with
// c.Status(http.StatusNoContent) and no body that also calls c.Error counts
// as failed unless it writes the header first with c.Writer.WriteHeaderNow.
//
// Cooldown keeps the key, and Exclusive releases it, whatever the status. A
// panic in a later handler ends the hold as a failure and keeps unwinding,
// so gin.Recovery (registered before this middleware, as gin.Default does)
// still answers 500.
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
