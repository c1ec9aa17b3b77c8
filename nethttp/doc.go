// Package nethttp guards net/http handlers (and chi, gorilla/mux and every
// router built on them) with a guard.Guard, one line of middleware per
// route:
//
//	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"}) // or redisstore.New(client)
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))
//
// A second POST /submit from the same user within five seconds gets 429 Too
// Many Requests and never reaches submit. Everything the middleware decides
// and answers is package guard's, shared with the gin and echo adapters, so
// the three answer alike and build the same stored keys.
//
// To read the handler's status the middleware wraps the ResponseWriter. The
// wrapper keeps http.Flusher, http.Hijacker and io.ReaderFrom, and has an
// Unwrap method so that http.ResponseController reaches the server's writer
// for deadlines and full duplex. A handler that writes nothing counts as 200.
package nethttp
