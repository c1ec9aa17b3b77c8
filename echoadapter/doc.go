// Package echoadapter guards echo routes with a guard.Guard, one line of
// middleware per route:
//
//	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	e.POST("/submit", submit, echoadapter.Middleware(guard.Lock(lock), key))
//
// A second POST /submit from the same user within five seconds gets 429 Too
// Many Requests and submit does not run. Answers, headers and stored keys
// are package guard's, identical in the nethttp and gin adapters. To answer
// rejections through the application's own HTTPErrorHandler, give
// WithRejectHandler a function that returns HTTPError(c, rej).
//
// # Status of the handler
//
// When the handler returns, the hold ends with the status the client gets.
// Echo handlers fail in two ways, and both count. A returned error is
// rendered by the HTTPErrorHandler after the middleware has returned, so
// its status is worked out as echo's DefaultHTTPErrorHandler renders it:
// the Code of an *echo.HTTPError (or of the one it holds as Internal), 500
// for any other error. An error handed to c.Error commits the response at
// once, and the committed status is read. A committed response stands,
// errors or not. For a guard.WithFailed that tells statuses apart, return
// an *echo.HTTPError with the status: a plain error is taken to be a 500.
// A panic ends the hold as a failure and keeps unwinding to echo's Recover.
//
// # Keys
//
// Middleware takes a keyfuncs.Func, which builds the same key in every
// framework. ContextMiddleware takes a KeyFunc reading the echo.Context,
// with echo's own sources: RealIP, Value (c.Get) and Path; Request adapts
// any keyfuncs.Func.
//
// RealIP(e) refuses, at start-up, an Echo whose IPExtractor is nil: echo
// v4's default, under which c.RealIP believes X-Forwarded-For or X-Real-IP,
// headers any client can set. Set e.IPExtractor first (echo.ExtractIPDirect(),
// or echo.ExtractIPFromXFFHeader(echo.TrustIPRange(cidr)) behind proxies).
// keyfuncs.RemoteIP with IPConfig.TrustedProxies does not depend on the
// Echo.
package echoadapter
