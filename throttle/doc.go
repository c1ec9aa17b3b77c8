// Package throttle turns away duplicate requests and throttles work per user
// and per resource, across every process of a service, with short-lived
// locks in a shared store (Redis in production, memory on one machine).
//
// A user double-clicks "submit", a phone retries a POST, a proxy resends it,
// and the copies land on different instances. A Limiter takes a lock named
// after who and what ("user 42" + "submit") with one atomic store command,
// SET key token NX PX ttl, and the copies find it held until the window ends.
// The middleware packages nethttp, ginadapter and echoadapter add it to a
// service in one line; this package is what they share, and what background
// jobs use directly.
//
// # Modes
//
//	mode       lock TTL                 released                          a duplicate gets
//	Dedupe     the window               when the handler fails or panics  429 until the window ends
//	Window     the window               never: it expires                 429 until the window ends
//	Exclusive  a lease, refreshed       when the handler returns          409 while the first runs
//
// Dedupe is the zero Mode: an admitted request keeps the key for the window,
// so its copies are rejected, but a failed one releases it so that the user
// can retry at once. Window is plain rate limiting: one request per key per
// window. Exclusive is mutual exclusion for work of unknown length.
//
// # Safety
//
// Every lock is owned by a token unique to its acquisition (NewToken), and
// Release and Extend are compare-and-delete and compare-and-expire in the
// store: a holder whose lease ran out can never free or extend the lock that
// somebody else holds now. Acquisition is one atomic command; there is no
// window in which a lock exists without an expiry.
//
// A lock is still only a guard for efficiency and user experience, not an
// exactly-once guarantee. A holder can pause (garbage collection, a stopped
// VM, a slow network) past its lease while another process takes the key; a
// Redis failover can lose a lock that was not yet replicated; a clock that
// jumps can shorten a lease. Work that must be correct under those faults
// asks for a fencing token (Policy.Fence, Lease.Fence): a number that
// strictly increases with every acquisition of the key, which the protected
// resource checks so that it refuses writes from a holder that has since been
// overtaken:
//
//	UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2
//
// # Long work
//
// Limiter.Do and Lease.KeepAlive refresh the lease every TTL/3 while the work
// runs (a watchdog), and cancel the work's context with cause ErrLost the
// moment the lease is known lost. Policy.Wait makes an acquisition wait for a
// held key, retrying with jittered backoff and waking as soon as the holder
// releases when the store is a Notifier. Policy.Reentrant lets the owner
// carried in a context take a key it already holds.
//
// # Stores
//
// A Store is three token-checked calls; memstore serves one process (tests, a
// single instance, or the fallback while Redis is down) and redisstore serves
// every process sharing a Redis, Sentinel group or Cluster. storetest is the
// conformance suite every store passes, yours included.
//
// # Errors
//
// Callers branch with errors.Is on ErrContended (somebody holds the key; a
// *ContendedError says for how long), ErrStore (the store failed), ErrLost,
// ErrNotHeld and ErrInvalid; context errors stay context errors.
package throttle
