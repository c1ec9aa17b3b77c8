// Package nethttp guards net/http handlers (and chi, gorilla/mux and other
// routers built on them) with a guard.Guard, one line per route:
//
//	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))
//
// A second POST /submit from the same user within five seconds gets 429
// and never reaches submit. Decisions and answers are package guard's, as
// in the gin and echo adapters, so the three answer alike and share keys.
//
// The handler's ResponseWriter is wrapped to read its status (200 when it
// writes nothing); the wrapper keeps http.Flusher, http.Hijacker and
// io.ReaderFrom, and Unwrap serves http.ResponseController.
package nethttp
