// Package guard is what a throttle middleware does, minus the framework:
// nethttp, ginadapter and echoadapter only translate their framework's
// idioms for [Guard.Serve], which decides each request, answers the ones
// turned away (429 or 409 with Retry-After, RateLimit fields and a problem
// body that never holds the key or an internal error) and ends the hold
// when the chain returns, alike in every framework.
//
// An adapter for another framework is about 60 lines: copy nethttp's
// middleware.go, or the package example, a complete adapter for a made-up
// framework. See docs/adapters.md in the repository for every answer and
// the steps of an adapter.
package guard
