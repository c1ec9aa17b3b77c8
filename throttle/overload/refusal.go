package overload

import (
	"strconv"
	"time"
)

// Reason says why a request was shed: a stable label for logs, metrics
// (the Reason of a "shed" throttle.Event) and an adapter's answer.
type Reason string

// The reasons a request is shed.
const (
	// ReasonLimit: every permit was taken and the request was ShedFirst,
	// so it did not wait.
	ReasonLimit Reason = "limit"
	// ReasonQueueTimeout: the request waited for a permit until its
	// deadline: the queue's interval, or its target when the service
	// showed overload within the last interval (CoDel).
	ReasonQueueTimeout Reason = "queue-timeout"
	// ReasonQueueFull: every permit was taken and the queue was full.
	ReasonQueueFull Reason = "queue-full"
)

// Refusal is the error of a request that Acquire shed: an HTTP adapter
// answers it with 503 and Retry-After, a gRPC one with UNAVAILABLE.
type Refusal struct {
	// Reason says why the request was shed.
	Reason Reason
	// RetryAfter is how long a client should wait before it tries again:
	// a second, or the queue's interval when requests take longer.
	RetryAfter time.Duration
}

// Error says that the request was shed, and why.
func (r *Refusal) Error() string {
	return "overload: request shed (" + string(r.Reason) + "), retry after " +
		strconv.FormatInt(int64(r.RetryAfter/time.Millisecond), 10) + "ms"
}
