// Package echoadapter guards echo routes with a guard.Guard, one line per
// route:
//
//	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	e.POST("/submit", submit, echoadapter.Middleware(guard.Lock(lock), key))
//
// A second POST /submit from the same user within five seconds gets 429
// and submit does not run. Answers and stored keys are package guard's, as
// in the nethttp and gin adapters.
//
// The hold ends with the status the client gets: a committed response's,
// else that of the returned error as echo's DefaultHTTPErrorHandler renders
// it (an *echo.HTTPError's Code, or its Internal one's; 500 for any other
// error). A panic ends the hold as a failure and keeps unwinding.
//
// With its IPExtractor unset (echo v4's default), c.RealIP believes
// X-Forwarded-For and X-Real-IP from anyone, so RealIP refuses such an Echo.
package echoadapter
