// Package echoadapter guards echo routes with a throttle.Limiter, one line
// of middleware per route:
//
//	limiter, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	e.POST("/submit", submit, echoadapter.Middleware(limiter, key))
//
// A second POST /submit from the same user within five seconds gets 429 Too
// Many Requests and submit does not run.
//
// It is the echo face of the same admission the nethttp and gin adapters
// use: the key is built, the request admitted under the limiter's policy,
// and the hold ended when the handler returns (Cooldown keeps the key,
// Dedupe releases it when the handler failed or panicked, Exclusive
// refreshes its lease while the handler runs and releases it afterwards; a
// Quota charges the request). Every response carries the RateLimit headers.
// A rejected request never reaches the handler: it is answered with 429
// (409 for Exclusive), Retry-After and RateLimit headers and an RFC 9457
// application/problem+json body, identical to the other adapters, and they
// all build the same stored keys, so echo, gin and net/http services share
// locks on one Redis.
//
// To answer rejections through the application's own HTTPErrorHandler,
// give WithRejectHandler a function that returns HTTPError(c, rej).
//
// # Status of the handler
//
// When the handler returns, the hold is ended with the status the client
// gets, which Policy.Failed judges for Dedupe (by default 400 and above is a
// failure, and the key is released so that the user can try again). Echo
// handlers fail in two ways, and both count:
//
//   - They return an error, which the Echo's HTTPErrorHandler renders once
//     the middleware has returned, too late to be read. The status is then
//     worked out the way echo's DefaultHTTPErrorHandler renders it: the Code
//     of an *echo.HTTPError (or of the *echo.HTTPError it holds as
//     Internal), and 500 for any other error, including an *echo.HTTPError
//     wrapped with fmt.Errorf, which the default handler does not unwrap.
//   - They hand the error to c.Error, which runs the HTTPErrorHandler at
//     once and commits the response (as echo's Recover middleware, placed
//     after this one, does with a panic). The committed status is read,
//     whatever the handler returns afterwards.
//
// A committed response stands, errors or not: the client has its status. A
// handler that writes 201 and then returns an error, or passes one to
// c.Error, only to have it logged keeps its key. A handler that returns nil
// without writing gets 200.
//
// An application HTTPErrorHandler that renders some errors with statuses
// of its own (a validation error as 422, say) agrees with the above on
// whether the request failed as long as it answers 400 or above for every
// error, which is what matters under the default Policy.Failed. For a
// Policy.Failed that tells statuses apart (one that keeps the key on client
// errors), return an *echo.HTTPError with the status, or call c.Error in
// the handler so that the response is committed before the middleware
// reads it; a plain error returned is taken to be a 500. A handler that
// calls c.Error and also returns the error needs an HTTPErrorHandler that
// leaves committed responses alone, as the default one does, since echo
// runs it again on the error returned.
//
// Cooldown keeps the key, and Exclusive releases it, whatever the status. A
// panic ends the hold as a failure and keeps unwinding, to echo's Recover
// middleware if one is registered before this one.
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
