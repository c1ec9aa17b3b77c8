// Package ginadapter guards gin routes with a guard.Guard, one line per
// route:
//
//	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	r.POST("/submit", ginadapter.Middleware(guard.Lock(lock), key), submit)
//
// A second POST /submit from the same user within five seconds gets 429
// and the chain is aborted before submit. Answers and stored keys are
// package guard's, as in the nethttp and echo adapters.
//
// The hold ends with c.Writer.Status() when c.Next returns. A chain that
// returns with c.Errors set and nothing written (for an error middleware
// upstream to answer) counts as failed, with the status set by c.Status
// if it is 400 or above, else 500. A panic ends the hold as a failure and
// keeps unwinding to gin.Recovery.
//
// gin trusts X-Forwarded-For and X-Real-IP from every peer until
// Engine.SetTrustedProxies is called, so ClientIP refuses such an engine.
package ginadapter
