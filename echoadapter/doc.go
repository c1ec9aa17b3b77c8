// Package echoadapter guards echo routes with a throttle.Limiter in one
// line:
//
//	e.POST("/submit", submit, echoadapter.Middleware(limiter, key))
//
// It is the echo face of the same admission the nethttp and gin adapters
// use: the key is built, the request admitted under the limiter's policy,
// and the hold ended when the handler returns (Window keeps the key, Dedupe
// releases it when the handler failed or panicked, Exclusive refreshes its
// lease while the handler runs and releases it afterwards). A rejected
// request never reaches the handler: it is answered with 429 (409 for
// Exclusive), Retry-After and RateLimit headers and an RFC 9457
// application/problem+json body, identical to the other adapters, and they
// all build the same stored keys, so echo, gin and net/http services share
// locks on one Redis.
//
// To answer rejections through the application's own HTTPErrorHandler,
// give WithRejectHandler a function that returns HTTPError(c, rej).
//
// # Status of the handler
//
// Echo handlers return errors that the HTTPErrorHandler renders after the
// middleware has returned, so the status is worked out the way echo's
// DefaultHTTPErrorHandler will render it: when the response is already
// committed, the status it was committed with; otherwise the Code of an
// *echo.HTTPError (or of the *echo.HTTPError it holds as Internal), 500 for
// any other error, and c.Response().Status when there is no error. A custom
// HTTPErrorHandler that maps errors to other statuses should return
// *echo.HTTPError values, or the Dedupe decision may differ from what the
// client saw. A panic ends the
// hold as a failure and keeps unwinding, to echo's Recover middleware if
// one is registered before this one.
//
// # Keys
//
// Middleware takes a keyfuncs.Func, which works on the *http.Request and so
// builds the same key in every framework. ContextMiddleware takes a KeyFunc
// reading the echo.Context instead, with echo's own sources: RealIP, Value
// (c.Get, e.g. a user ID set by an authentication middleware) and Path (the
// route pattern); Request adapts any keyfuncs.Func.
//
// RealIP(e) keys on c.RealIP and refuses, with an error at start-up, an
// Echo whose IPExtractor is nil. That is echo v4's default, and then
// c.RealIP returns the leftmost X-Forwarded-For address, or X-Real-IP,
// headers any client can set, before the peer address: keyed on that, a
// client picks a new identity per request and is never throttled. Set the
// extractor first, then build the key:
//
//	e := echo.New()
//	e.IPExtractor = echo.ExtractIPDirect() // behind proxies: echo.ExtractIPFromXFFHeader(echo.TrustIPRange(cidr))
//	key, err := echoadapter.RealIP(e)
//	if err != nil {
//		log.Fatal(err)
//	}
//	e.POST("/submit", submit, echoadapter.ContextMiddleware(limiter, key))
//
// keyfuncs.ForwardedIP with an explicit trusted list is the alternative
// that does not depend on the Echo.
package echoadapter
