// Package guard is what a throttle middleware does, minus the framework.
// Packages nethttp, ginadapter and echoadapter are thin translations on top
// of it; read this if you are writing an adapter for another framework:
// fiber, a gRPC interceptor, a custom router. (chi, gorilla/mux and other
// net/http routers need none: use nethttp.)
//
// An adapter is given one Guard (Lock, Quota or Replay) when its middleware
// is built, and for each request builds the request's identity with its key
// function and calls Guard.Serve with an Exchange: the request, the response writer, and
// a Next that runs the rest of the chain and reports the status the client
// got. Serve does everything else, the same way for every framework:
//
//   - a request whose identity could not be built gets 400 (413 for a body
//     too long to hash), never a key shared with others;
//   - the store decides; a request turned away gets 429 or 409 with
//     Retry-After, the RateLimit fields of
//     draft-ietf-httpapi-ratelimit-headers-11 and an RFC 9457 problem body
//     (or is handed back to the adapter's own rejection handler), a Replay
//     duplicate gets the first answer, and a failing store is handled as
//     the policy's WhenStoreFails says;
//   - a request that goes ahead gets the RateLimit fields and runs through
//     Next with a context carrying its lease where the policy needs one;
//     its hold ends when Next returns, as the mode says, also when the
//     handler panics (the panic keeps unwinding: nothing is recovered).
//
// The adapter is left with its framework's idioms: where the request and
// the response writer are, how the rest of the chain runs, how a chain is
// aborted, and how the application answers a rejection its own way. The
// package example is a complete adapter for a small made-up framework in
// about forty lines.
//
// Status codes, headers and bodies are decided here, not in adapters, so
// that every framework answers alike and, with the same keyfuncs and
// policy, services in different frameworks share keys on one store. The
// problem body never contains the key, a lease token, the client address or
// an internal error: Rejection.Err is for logs only.
package guard
