// Package nethttp guards net/http handlers (and chi, gorilla/mux and other
// routers built on them) with a guard.Guard, one line per route:
//
//	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))
//
// Decisions and answers are package guard's, so the gin and echo adapters
// answer alike and share keys. See docs/adapters.md in the repository.
package nethttp
