// Package ginadapter guards gin routes with a guard.Guard, one line of
// middleware per route:
//
//	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	r.POST("/submit", ginadapter.Middleware(guard.Lock(lock), key), submit)
//
// A second POST /submit from the same user within five seconds gets 429 Too
// Many Requests and the chain is aborted (c.Abort) before submit. Answers,
// headers and stored keys are package guard's, identical in the nethttp and
// echo adapters, so gin, echo and net/http services share locks on one
// Redis.
//
// # Status of the handler
//
// When c.Next returns, the hold ends with the status the client gets:
// c.Writer.Status(), 200 when nothing was written. One gin idiom needs
// more: a handler that calls c.Error and returns, for an error middleware
// registered before this one to answer once the chain has returned. So a
// chain that returns with c.Errors set and no header written counts as
// failed, with the status set by c.Status if it is 400 or above, and 500
// otherwise (a gin.Error carries no status; 500 is what such middleware
// answers). A written response stands, errors or not: the client has its
// status. A panic ends the hold as a failure and keeps unwinding to
// gin.Recovery.
//
// # Keys
//
// Middleware takes a keyfuncs.Func, which builds the same key in every
// framework. ContextMiddleware takes a KeyFunc reading the *gin.Context,
// with gin's own sources: ClientIP, Value (c.Get) and FullPath; Request
// adapts any keyfuncs.Func.
//
// ClientIP(e) refuses, at start-up, an Engine that believes X-Forwarded-For
// or X-Real-IP from any peer, which is gin's default until
// Engine.SetTrustedProxies is called: keyed on headers any client can set,
// a client picks a new identity per request and is never throttled.
// Configure the engine first (SetTrustedProxies, TrustedPlatform,
// RemoteIPHeaders), then build the key. keyfuncs.RemoteIP with
// IPConfig.TrustedProxies does not depend on the engine.
package ginadapter
