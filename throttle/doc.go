// Package throttle turns away duplicate requests and throttles work per user
// and per resource, across every process of a service, with short-lived locks
// in a shared store: Redis in production, memory on one machine.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	limiter, err := throttle.New(redisstore.New(client), throttle.policy{Name: "submit"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//	mux.Handle("POST /submit", nethttp.Middleware(limiter, key)(submit))
//
// The first POST /submit of a user runs; its copies within the next five
// seconds get 429 Too Many Requests with Retry-After, whichever process they
// reach. memstore.New() instead of the Redis store does the same within one
// process, and ginadapter and echoadapter add the same middleware to gin and
// echo.
//
// A user double-clicks "submit", a phone retries a POST, a proxy resends it,
// and the copies land on different instances. A Limiter takes a lock named
// after who and what ("user 42" + "submit") with one atomic store command,
// SET key token NX PX ttl, and the copies find it held until it ends.
//
// # Modes
//
//	Mode       key held for        released early              a second request gets
//	Dedupe     Window              when the handler fails      429 until the window ends
//	Cooldown   Window              never                       429 until the window ends
//	Exclusive  LeaseTTL, refreshed when the handler returns    409 while the first runs
//	Quota      no lock: a GCRA timestamp, refilled smoothly    429 once Limit per Window are spent
//	Replay     Window              when the handler fails      the first response again, once it is ready
//
// Quota is rate limiting proper: Limit requests per Window per key, Burst at
// once, one store call per decision (Limiter.AllowN), timed by the Redis
// server's clock. With CountOnlyFailures it charges only failed requests,
// for login forms.
//
// # Stores
//
// memstore serves one process: tests, a single instance, or the fallback
// while Redis is down (FailOver). redisstore serves every process that shares
// a Redis, Sentinel group or Cluster. Package store defines the Store
// interface for stores of your own; storetest checks them.
//
// # Safety
//
// Every lock is owned by a token unique to its acquisition; release and
// extend compare it inside the store, so a holder whose lease ran out never
// frees or extends the lock somebody else holds now. A lock is still a guard
// for efficiency and user experience, not an exactly-once guarantee: a holder
// can pause past its lease, and a Redis failover can lose a lock not yet
// replicated. Work that must stay correct asks for a fencing token
// (Policy.Fence, Lease.Fence), a number that grows with every acquisition of
// the key, and has the resource refuse writes older than one it has seen:
//
//	UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2
//
// # Long work
//
// Limiter.Do holds a key for background work: it refreshes the lease every
// LeaseTTL/3 (a watchdog) and cancels the work's context with cause ErrLost
// the moment the lease is lost. Policy.Wait lets it wait for a held key with
// jittered backoff, woken early by a release; Policy.Reentrant lets an owner
// take a key it already holds.
package throttle
