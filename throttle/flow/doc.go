// Package flow decides each call a throttle limiter guards, on any
// transport: whether it goes ahead and under which hold, how that hold ends,
// what a Replay keeps of its answer, and what the RateLimit fields say. It
// never imports net/http. An adapter only translates its transport's
// idioms: it builds a Call from its request, runs the rest of its chain
// with Job.Serve (or Job.Begin and Permit.End), sends the permit's Limits
// with the answer, and answers a Refusal its own way: package guard for
// HTTP (nethttp, ginadapter, echoadapter); a gRPC interceptor or a fasthttp
// handler the same way. The package's tests hold a complete adapter for a
// made-up transport.
package flow
