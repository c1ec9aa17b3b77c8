// Package throttle turns away duplicate requests and throttles work per user
// and per resource, across every process of a service, with short-lived locks
// in a shared store: Redis in production, memory on one machine.
//
//	lock, err := throttle.NewLock(redisstore.New(client), throttle.LockConfig{Name: "submit"})
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))
//
// The first POST /submit of a user runs; its copies within the next five
// seconds get 429 with Retry-After, whichever process they reach. A [Lock]
// holds a key (see [Mode]), a [Quota] spends a [Rate] per key, and a [Replay]
// answers duplicates with the first response.
//
// A lock's token is checked inside the store, so a holder whose lease ran
// out never frees another's lock; but a lock guards efficiency, not
// exactly-once. Work that must stay correct asks for a fencing token
// (LockConfig.Fence), and the resource refuses writes older than one it saw:
//
//	UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2
//
// See docs/stores.md in the repository for the stores and their failures.
package throttle
