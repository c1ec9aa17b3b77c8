// Package grpcadapter guards gRPC servers with throttle's jobs (package
// flow): a unary and a stream server interceptor, and the Keys a call is
// identified by (metadata, peer address, method).
//
//	lock, _ := throttle.NewLock(store, throttle.LockConfig{Name: "submit"})
//	user := grpcadapter.FirstOf(grpcadapter.Metadata("x-user-id"), grpcadapter.Peer())
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcadapter.Unary(flow.Lock(lock), user)))
//
// The interceptors only translate: flow decides every call, as it does for
// the HTTP adapters, so that a lock or quota keyed alike is shared with
// them on one store. Each interceptor guards every method of the server it
// is given to; to guard one method, test info.FullMethod in a wrapper, or
// let flow.Skip skip the others (Call.Route is the full method name, and
// Call.Request the Info).
//
// Every answer, a refusal too, carries the header metadata
// "ratelimit-policy" and "ratelimit", with the values of the RateLimit-Policy
// and RateLimit fields of draft-ietf-httpapi-ratelimit-headers that an HTTP
// adapter would send. The map an interceptor gives SetHeader is built once
// for each pair of values and shared by the calls that send them, so that
// a call allocates none: grpc-go's transport copies it, and so must a
// grpc.ServerTransportStream of your own (a test's), never changing it.
// A call turned away gets the code of gRPC's mapping of the HTTP status
// package guard answers with:
//
//	reason (flow)       HTTP  code                 details
//	contended           429   RESOURCE_EXHAUSTED   RetryInfo, QuotaFailure (the violated policies)
//	  (Exclusive, N in
//	  flight: a policy
//	  with no window)   409   ABORTED              RetryInfo
//	bad-key, bad-cost   400   INVALID_ARGUMENT     (the message names what is missing)
//	key-reused          422   INVALID_ARGUMENT
//	store-unavailable   503   UNAVAILABLE          RetryInfo
//	overloaded          503   UNAVAILABLE          RetryInfo
//	in-flight           409   ABORTED              RetryInfo: retry to get the first call's response
//	not-kept            409   FAILED_PRECONDITION
//	canceled                  CANCELED, or DEADLINE_EXCEEDED
//	bad-rate            500   INTERNAL
//
// RetryInfo's delay is the HTTP Retry-After, whole seconds. A Replay
// key's first call succeeded but its response was not kept (not-kept):
// FAILED_PRECONDITION rather than ABORTED, and no RetryInfo, because a
// retry would not get the response, and one after the key expired would
// run the call again; the client should look at what the call did first.
//
// A Replay duplicate gets the first call's response (see Unary). Messages
// never hold a key, a peer address or an internal error.
package grpcadapter
