// Package guard is what a throttle middleware does, minus the framework:
// nethttp, ginadapter and echoadapter translate their framework's idioms
// for it, and an adapter for another one (fiber, a gRPC interceptor) is as
// thin; net/http routers such as chi need none.
//
// A Guard (Lock, Quota or Replay) is made with the middleware. For each
// request the adapter builds the identity with its key function and calls
// Guard.Serve with the response writer, the request and a function running
// the rest of the chain. Serve does the rest alike for every framework:
//
//   - an identity that could not be built gets 400 (413 for a body too
//     long to hash), never a key shared with others;
//   - a request the store turns away gets 429 or 409 with Retry-After, the
//     RateLimit fields of draft-ietf-httpapi-ratelimit-headers-11 and an
//     RFC 9457 problem body (or goes to the adapter's rejection handler); a
//     Replay duplicate gets the first answer; a failing store is handled as
//     the limiter's WhenStoreFails says;
//   - a request that goes ahead gets the RateLimit fields and runs through
//     the chain with its lease in the context where the mode needs one; its
//     hold ends as the mode says when the chain returns or panics.
//
// The package example is a complete adapter for a small made-up framework.
// The problem body never holds the key, a token, the client address or an
// internal error: Rejection.Err is for logs only.
package guard
