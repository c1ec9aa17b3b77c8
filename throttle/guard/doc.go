// Package guard is the one piece of HTTP behaviour the three middleware
// adapters share: admitting a request under a throttle.Limiter, ending its
// hold when the handler returns, and writing the rejection headers and the
// RFC 9457 problem body. Adapters only translate their framework's request,
// response and abort idioms to it, so that net/http, gin and echo services
// behave alike and share keys on one store.
package guard
