// Package guard is what a throttle middleware does, minus the framework.
// Packages nethttp, ginadapter and echoadapter are each about 40 lines on top
// of it; read this if you are writing an adapter for another framework:
// fiber, a gRPC interceptor, a custom router. (chi, gorilla/mux and other
// net/http routers need none: use nethttp.)
//
// An adapter takes four steps per request:
//
//  1. Build the identity with a keyfuncs.Func (or the framework's own
//     source, such as a peer address). When that fails, answer
//     g.BadKey(err) (g is the Guard that New made when the middleware was
//     built): 400, or 413 for a body too long to hash; nil under a dry run,
//     where the request goes on unguarded. Never fall back to a shared key.
//  2. Call g.Begin (g.BeginN with a cost for Quota policies,
//     g.BeginReplay with the body's fingerprint for Replay policies) with
//     the request's context. A non-nil *Rejection means the request does
//     not go ahead: when its Replay is set, send that recorded response
//     (Response.Write) whatever the application's rejection handler;
//     otherwise answer it with Write (through a small http.ResponseWriter
//     over the framework's context if it has none, as in the example) or
//     in the framework's own idiom with SetHeaders and Body or Detail; and
//     abort the chain. An adapter that answers with Write anyway can call
//     g.BeginOrWrite instead of g.BeginN: it writes the commonest
//     rejection, a held key or a spent quota, itself, without allocating
//     it, and says so.
//  3. Otherwise set the RateLimit headers with Ticket.SetHeaders, hand the
//     handler the context Begin returned (it carries the lease for
//     Exclusive, Fence and Reentrant policies) and call Ticket.Run
//     around the rest of the chain (Ticket.Finish where the framework only
//     has separate before and after hooks). Its func reports the status the
//     client got, 200 when the handler wrote nothing; for Dedupe and Replay
//     that decides whether the key is released (see throttle.Policy.Failed).
//     When Ticket.Capture is not nil (the first request of a Replay key),
//     feed it the response as it is sent: the header and status when they
//     go out, every body write, Abandon on a flush or a hijack; Finish
//     records what it captured for the key's duplicates.
//  4. Recover nothing. When the handler panics, Run releases the key (Dedupe,
//     Exclusive) and lets the panic unwind with its own value to the
//     framework's recovery.
//
// Every Ticket that Begin admits must be run or finished once; otherwise an
// Exclusive lease is refreshed, and its key held, for ever.
//
// Status codes, headers and bodies are decided here, not in adapters, so that
// every framework answers a rejection alike (429 or 409 with Retry-After and
// RateLimit headers, 400/413, 503) and, with the same keyfuncs and policy,
// services in different frameworks share keys on one store. The problem body
// (RFC 9457) never contains the key, a lease token, the client address or an
// internal error: Rejection.Err is for logs only. Keeping all policy in one
// place keeps adapters thin enough to check by reading, and means a fix here
// reaches every framework at once.
//
// The package example is a complete adapter for a small made-up framework.
package guard
