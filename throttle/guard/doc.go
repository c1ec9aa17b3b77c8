// Package guard is what a throttle middleware does over HTTP, minus the
// framework: a flow.Job decides each request (package flow, the same for
// every transport), and guard gives the decision its HTTP form: the
// status, Retry-After, the RateLimit fields and a problem body that never
// holds the key or an internal error for a request turned away (429 or
// 409), the RateLimit fields of one that goes ahead, and the capture and
// replay of a Replay's responses.
//
// nethttp, ginadapter and echoadapter only translate their framework's
// idioms for Guard.Serve, which takes net/http's request and writer. An
// adapter for another HTTP framework on net/http's types does the same in
// about 40 lines (the package example is a complete one). One on other
// types (fasthttp: fiberadapter) completes its flow.Call with Scope, serves
// with Guard.Job and answers with Admit, Outcome, Rejection and
// Rejection.Render, which set header fields on a
// map[string][]string keyed by canonical names (http.Header is one; values
// may be shared: send or copy them, never change them). A transport other
// than HTTP (gRPC) builds on package flow alone. See docs/adapters.md in
// the repository for every answer and the steps of an adapter.
package guard
