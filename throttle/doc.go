// Package throttle turns away duplicate requests and throttles work per user
// and per resource, across every process of a service, with short-lived locks
// in a shared store: Redis in production, memory on one machine.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	lock, err := throttle.NewLock(redisstore.New(client), throttle.LockConfig{Name: "submit"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))
//
// The first POST /submit of a user runs; its copies within the next five
// seconds get 429 Too Many Requests with Retry-After, whichever process they
// reach. memstore.New() instead of the Redis store does the same within one
// process, and ginadapter and echoadapter add the same middleware to gin and
// echo.
//
// # Jobs
//
// There is one type per job, each with a small config of its own:
//
//	Lock    holds a key: one request or job per key at a time, or per window
//	        Dedupe     held for TTL, released when the handler fails   429 until the window ends
//	        Cooldown   held for TTL whatever happens                   429 until the window ends
//	        Exclusive  a lease of TTL, refreshed while the work runs   409 while the first runs
//	Quota   no lock: a GCRA timestamp per key, refilled smoothly;     429 once the Rate is spent
//	        the Rate is a value of each call, so a request may have its own
//	Replay  a Dedupe key whose first response is recorded             the first response again
//
// Package guard answers a request turned away, the same in every framework.
//
// # Stores
//
// memstore serves one process (tests, a single instance, the fallback while
// Redis is down); redisstore every process that shares a Redis, Sentinel
// group or Cluster; redlock a quorum of independent masters. Package store
// defines the interface for stores of your own, and storetest checks them.
//
// # Safety
//
// Every lock is owned by a token unique to its acquisition; release and
// extend compare it inside the store, so a holder whose lease ran out never
// frees or extends the lock somebody else holds now. A lock is still a guard
// for efficiency and user experience, not an exactly-once guarantee: a holder
// can pause past its lease, and a Redis failover can lose a lock not yet
// replicated. Work that must stay correct asks for a fencing token
// (LockConfig.Fence, Lease.Fence), a number that grows with every
// acquisition of the key, and has the resource refuse writes older than one
// it has seen:
//
//	UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2
//
// Lock.Do refreshes a lease every TTL/3 (a watchdog) and cancels the work's
// context with cause ErrLost the moment the lease is lost.
package throttle
