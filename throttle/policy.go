package throttle

import (
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Mode says how long a key stays held and when it is released. See the
// package documentation for a table of the three modes.
type Mode uint8

const (
	// Dedupe holds the key for the window after a request is admitted, and
	// releases it early when the request fails (status >= 400 by default,
	// see Policy.Failed) or panics, so that the user can simply retry a
	// request that did not go through. It is the zero Mode and the right
	// one for form submissions and client or proxy retries.
	Dedupe Mode = iota
	// Window holds the key for the whole window whatever the outcome: one
	// request per key per window. It is per-user rate limiting of an
	// endpoint.
	Window
	// Exclusive holds the key while the work runs, under a lease that is
	// refreshed every Lease/3, and releases it when the work returns: one
	// request (or job) per key at a time. A duplicate gets 409 Conflict.
	Exclusive
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Dedupe:
		return "dedupe"
	case Window:
		return "window"
	case Exclusive:
		return "exclusive"
	}
	return "unknown"
}

// OnStoreError chooses what happens to a request when the store cannot
// answer within Policy.Timeout.
type OnStoreError uint8

const (
	// FailDefault picks FailOpen for Window and Dedupe (a duplicate that
	// slips through beats an outage of the endpoint) and FailClosed for
	// Exclusive (the caller relies on mutual exclusion).
	FailDefault OnStoreError = iota
	// FailOpen lets the request through unguarded, logs the error with
	// Policy.Logger and counts it in Stats.FailedOpen.
	FailOpen
	// FailClosed rejects the request with 503 Service Unavailable and a
	// Retry-After; the response shows no internals.
	FailClosed
	// FailOver serves from Policy.Fallback (typically a memstore) while the
	// store fails, and goes back to the store once it answers again (it is
	// retried at most once per second). Locks taken during the outage are
	// only as wide as the fallback: per process for a memstore.
	FailOver
)

// String returns the policy's name.
func (o OnStoreError) String() string {
	switch o {
	case FailDefault:
		return "default"
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	case FailOver:
		return "over"
	}
	return "unknown"
}

// Defaults of a Policy's zero fields.
const (
	DefaultWindow  = 5 * time.Second
	DefaultLease   = 30 * time.Second
	DefaultPrefix  = "throttle"
	DefaultTimeout = 100 * time.Millisecond
)

// Policy says what a Limiter guards and how. Only Name is required; every
// other zero field takes the default its comment gives, so that
// Policy{Name: "submit"} is a working Dedupe policy with a 5 s window.
type Policy struct {
	// Name identifies the policy in keys ("<prefix>:{<name>:<id>}") and in
	// the RateLimit headers. Required; at most 64 bytes of printable
	// ASCII, so that it can stand in a header as a quoted string.
	Name string

	// Mode is Dedupe (the zero value), Window or Exclusive.
	Mode Mode

	// Window is how long a key stays held in Window and Dedupe modes.
	// Default 5 s; at least 1 ms.
	Window time.Duration

	// Lease is the time to live of an Exclusive key, and of keys held by
	// Limiter.Do. It is refreshed every Lease/3 while the work runs, so it
	// only bounds how long a crashed holder blocks others. Default 30 s;
	// at least 3 ms.
	Lease time.Duration

	// MaxHold, when positive, caps how long Do and an Exclusive request
	// may keep a key: the lease is not refreshed past it and the work's
	// context is cancelled with ErrLost. Zero means no cap.
	MaxHold time.Duration

	// Prefix starts every stored key. Default "throttle". It must not
	// contain '{' or '}' (they would break the Redis Cluster hash tag).
	Prefix string

	// Timeout bounds every store call (on top of the caller's context), so
	// that a slow store delays a request by at most this much. Default
	// 100 ms.
	Timeout time.Duration

	// OnStoreError is what the HTTP middleware does when the store fails.
	// Default FailDefault. Limiter.Acquire itself returns a *StoreError,
	// except under FailOver, where it serves from Fallback.
	OnStoreError OnStoreError

	// Fallback is the store FailOver serves from while the primary store
	// fails. Required with FailOver, ignored otherwise.
	Fallback Store

	// Wait is how long an acquisition waits for a held key before it
	// gives up with ErrContended. Zero means try once. Waiting retries with
	// Backoff and wakes early when the store is a Notifier and the holder
	// releases; it always ends with the caller's context.
	Wait time.Duration

	// Backoff is the pause before each retry of a waiting acquisition.
	// Default ExponentialJitter(10*time.Millisecond, time.Second).
	Backoff Backoff

	// Fence asks every acquisition for a fencing token (Lease.Fence), a
	// number that strictly increases for the key across all processes.
	// It costs nothing extra in round trips.
	Fence bool

	// Reentrant lets an owner carried in the context (see WithOwner)
	// acquire a key it already holds; the key is freed when every hold is
	// released. Limiter.Do and the Exclusive middleware put an owner in the
	// context they hand to the work.
	Reentrant bool

	// RejectStatus is the HTTP status of a rejected duplicate. Default 429
	// Too Many Requests for Window and Dedupe, 409 Conflict for Exclusive.
	RejectStatus int

	// Failed tells Dedupe whether a handler's response status means the
	// request failed, so that the key is released and the user may retry.
	// Default: status >= 400.
	Failed func(status int) bool

	// Logger receives store errors and lost leases. When nil, the
	// slog.Default() of the moment is used, so that a service may set its
	// default logger after making its limiters.
	Logger *slog.Logger
}

// TTL returns the time to live of the keys the policy takes: the Window for
// Window and Dedupe modes, the Lease for Exclusive.
func (p Policy) TTL() time.Duration {
	if p.Mode == Exclusive {
		return p.Lease
	}
	return p.Window
}

// withDefaults fills zero fields and checks the rest.
func (p Policy) withDefaults() (Policy, error) {
	if p.Name == "" || len(p.Name) > 64 {
		return p, invalid("policy name must be 1 to 64 bytes, got %d", len(p.Name))
	}
	for i := 0; i < len(p.Name); i++ {
		if c := p.Name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return p, invalid("policy name %q: only printable ASCII without quotes or backslashes", p.Name)
		}
	}
	if p.Mode > Exclusive {
		return p, invalid("unknown mode %d", p.Mode)
	}
	if p.Window == 0 {
		p.Window = DefaultWindow
	}
	if p.Lease == 0 {
		p.Lease = DefaultLease
	}
	if p.Window < time.Millisecond {
		return p, invalid("window %v is shorter than 1ms", p.Window)
	}
	if p.Lease < 3*time.Millisecond {
		return p, invalid("lease %v is shorter than 3ms", p.Lease)
	}
	if p.MaxHold < 0 || p.Wait < 0 || p.Timeout < 0 {
		return p, invalid("durations must not be negative")
	}
	if p.Prefix == "" {
		p.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(p.Prefix, "{}") {
		return p, invalid("prefix %q must not contain '{' or '}'", p.Prefix)
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.OnStoreError > FailOver {
		return p, invalid("unknown OnStoreError %d", p.OnStoreError)
	}
	if p.OnStoreError == FailDefault {
		p.OnStoreError = FailOpen
		if p.Mode == Exclusive {
			p.OnStoreError = FailClosed
		}
	}
	if p.OnStoreError == FailOver && p.Fallback == nil {
		return p, invalid("FailOver needs a Fallback store")
	}
	if p.Backoff == nil {
		p.Backoff = ExponentialJitter(10*time.Millisecond, time.Second)
	}
	if p.RejectStatus == 0 {
		p.RejectStatus = http.StatusTooManyRequests
		if p.Mode == Exclusive {
			p.RejectStatus = http.StatusConflict
		}
	}
	if p.RejectStatus < 400 || p.RejectStatus > 599 {
		return p, invalid("reject status %d is not a 4xx or 5xx", p.RejectStatus)
	}
	if p.Failed == nil {
		p.Failed = func(status int) bool { return status >= 400 }
	}
	return p, nil
}

// logger returns the policy's Logger, or slog.Default() when it has none.
func (p *Policy) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}
