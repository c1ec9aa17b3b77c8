package throttle

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Mode says how long a key stays held and when it is released; see the
// table in the package documentation.
type Mode uint8

const (
	// Dedupe (the zero Mode) holds the key for the Window after a request is
	// admitted, but releases it at once when the request fails (see
	// Policy.Failed) or panics, so that the user can simply try again. For
	// form submissions and client or proxy retries.
	Dedupe Mode = iota
	// Cooldown holds the key for the whole Window whatever the outcome: one
	// request per key per window. For per-user rate limiting of an endpoint.
	Cooldown
	// Exclusive holds the key while the work runs, under a lease of LeaseTTL
	// refreshed every LeaseTTL/3, and releases it when the work returns: one
	// request or job per key at a time. A second caller gets 409 Conflict.
	Exclusive
	// Quota allows Limit requests per Window per key, of which up to Burst
	// may come at once, and refills smoothly: one request every
	// Window/Limit. It keeps no lock but one timestamp per key (the generic
	// cell rate algorithm, GCRA), which expires when the quota is full
	// again; decide requests with Limiter.AllowN. For per-user rate
	// limiting of an API, and, with CountOnlyFailures, of login attempts.
	Quota
	// Replay is Dedupe that answers a duplicate with the first request's
	// response instead of turning it away: the first request runs under
	// the key and, when it succeeds, its response is recorded next to the
	// key for the Window (Lease.Record); a duplicate gets that record
	// (Limiter.Claim), and one that arrives while the first is still in
	// flight waits up to Wait for it. A double-clicked "Place order" then
	// lands on the order page, and a retried POST gets the order id of the
	// attempt that went through. It needs a store that keeps records
	// (store.Recorder: memstore and redisstore, not redlock) and fails
	// closed by default: an order must not be placed twice because the
	// store is down.
	//
	// It is a mode of its own rather than an option of Dedupe because what
	// a duplicate gets, how long it waits, the failure default and the
	// store it needs all differ; the hold itself is Dedupe's.
	Replay
)

// DefaultReplayWait is how long a Replay duplicate waits for an original
// still in flight when Policy.Wait is zero: long enough for a handler that
// places an order, short enough for a client that is waiting.
const DefaultReplayWait = 5 * time.Second

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Dedupe:
		return "dedupe"
	case Cooldown:
		return "cooldown"
	case Exclusive:
		return "exclusive"
	case Quota:
		return "quota"
	case Replay:
		return "replay"
	}
	return "unknown"
}

// FailMode is what a request gets when the store fails: it returns an
// error, or answers nothing for Policy.Timeout. A store that answers, if
// slowly, is not failing (see Policy.Timeout).
type FailMode uint8

const (
	// FailDefault is FailOpen for Dedupe, Cooldown and Quota (a duplicate
	// or an extra request that slips through beats an outage of the
	// endpoint) and FailClosed for Exclusive (the caller relies on mutual
	// exclusion) and Replay (a retried order must not be placed twice).
	FailDefault FailMode = iota
	// FailOpen lets the request through unguarded; the error is logged
	// (at most once a second) and counted in Stats.FailedOpen.
	FailOpen
	// FailClosed turns the request away with 503 Service Unavailable and a
	// Retry-After; the response shows no internals.
	FailClosed
	// FailOver takes locks in Policy.Fallback (a memstore: per process)
	// after three store failures in a row, and goes back once it answers.
	// The fallback mirrors every hold, so one process never grants a key
	// twice across the switch. Quotas are not mirrored: while the store
	// fails, each process counts its own requests in the fallback, so a
	// user may get up to one quota per process until the store is back.
	FailOver
)

// String returns the fail mode's name.
func (f FailMode) String() string {
	switch f {
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
	DefaultWindow   = 5 * time.Second
	DefaultLeaseTTL = 30 * time.Second
	DefaultPrefix   = "throttle"
	DefaultTimeout  = 100 * time.Millisecond
)

// Policy says what a Limiter guards and how. Only Name is required: every
// zero field takes the default its comment gives, so Policy{Name: "submit"}
// is a working Dedupe policy with a 5 s window.
type Policy struct {
	// Name names the policy in stored keys and in the RateLimit headers:
	// 1 to 64 bytes of printable ASCII without '"' or '\'.
	Name string
	// Mode is Dedupe (the zero value), Cooldown, Exclusive, Quota or
	// Replay.
	Mode Mode
	// Window is how long a Dedupe, Cooldown or Replay key stays held (for
	// Replay: how long the first response is replayed), and the period of a
	// Quota's Limit. Default 5 s; at least 1 ms, and, for a key held on a
	// store outside this process, at least 3 ms (see New).
	Window time.Duration
	// Limit is how many requests a Quota allows per Window. Required for
	// Quota (at least 1), and must be 0 in the other modes, which allow one
	// request per key at a time.
	Limit int
	// Burst is how many requests a Quota allows at once, from a full
	// quota. Default Limit. A Burst below Limit smooths traffic; above
	// Limit it lets idle users catch up.
	Burst int
	// CountOnlyFailures makes a Quota charge only failed requests (see
	// Failed): a login form allowing 5 wrong passwords per 15 minutes, for
	// which successes cost nothing. Each request is charged before the
	// handler runs and refunded when it succeeds, so requests running at
	// the same time can never together exceed the quota: of 50 concurrent
	// wrong passwords against a Burst of 5, exactly 5 reach the handler.
	// The price is that successes in flight hold quota until they return.
	CountOnlyFailures bool
	// LeaseTTL is the time to live of an Exclusive key and of the keys
	// Limiter.Do holds. It is refreshed every LeaseTTL/3 while the work
	// runs, so it only bounds how long a crashed holder blocks the others.
	// Default 30 s; at least 3 ms.
	LeaseTTL time.Duration
	// MaxHold, when positive, caps how long Do and an Exclusive request keep
	// a key: the lease is not refreshed past it and the work's context is
	// cancelled with ErrLost.
	MaxHold time.Duration
	// Prefix starts every stored key. Default "throttle"; no '{' or '}'.
	Prefix string
	// Timeout is how long a store outside this process may stay silent
	// before a call counts it as failing. Default 100 ms. A call is not
	// ended by its own age: while the store answers other calls of this
	// process (a burst queued behind the client's connections), it waits,
	// and only after 30 × Timeout is the request shed (503, never let
	// through). A call fails, and WhenStoreFails applies, once the store
	// has answered no call for a whole Timeout (ten before its first
	// answer, or while this process is starved of CPU), or when it
	// returns an error. A command once sent gets Timeout for its reply.
	// The caller's context bounds every call too.
	Timeout time.Duration
	// WhenStoreFails decides a request the store cannot answer. Default
	// FailDefault.
	WhenStoreFails FailMode
	// Fallback is the store FailOver uses while the store fails.
	Fallback Store
	// Wait is how long an acquisition waits for a held key, retrying with
	// Backoff and woken early by a release, before it gives up with
	// ErrContended, and how long AllowN may sleep for the quota to refill.
	// Zero means try once. For Replay it is how long a duplicate waits for
	// an original still in flight to record its response (Limiter.Claim):
	// zero means DefaultReplayWait, and a negative Wait not to wait at all.
	Wait time.Duration
	// Backoff paces the retries of a waiting acquisition. Default
	// ExponentialJitter(10*time.Millisecond, time.Second).
	Backoff Backoff
	// Fence asks every acquisition for a fencing token (Lease.Fence). It
	// costs no extra round trip.
	Fence bool
	// Reentrant lets the owner carried in a context (WithOwner) take a key
	// it already holds; the key is freed when every hold is released.
	Reentrant bool
	// RejectStatus is the HTTP status of a turned-away request. Default
	// 429 Too Many Requests, or 409 Conflict for Exclusive. (A Replay
	// duplicate whose original is still in flight when its Wait ends gets
	// 409 whatever this says; see package guard.)
	RejectStatus int
	// Failed tells from the handler's status whether the request failed:
	// Dedupe and Replay then release its key (Replay records nothing), and
	// CountOnlyFailures keeps its charge. Default: status >= 400.
	Failed func(status int) bool
	// Logger receives store errors and lost leases. Default: the
	// slog.Default() of the moment.
	Logger *slog.Logger
	// Observer, when set, is told of every decision, store call and lease
	// event (see Event), for metrics and traces: packages promthrottle and
	// otelthrottle. Nil costs nothing.
	Observer Observer
	// DryRun decides, counts, logs and sends the RateLimit headers, but
	// lets every request through: a request that would have been turned
	// away is observed as DryRunRejected instead. For rolling a policy out
	// safely: watch what it would reject before it rejects anything.
	DryRun bool
}

// TTL returns the time to live of the keys the policy takes: the Window for
// Dedupe, Cooldown and Replay, the LeaseTTL for Exclusive. (A Quota key lives until
// its quota is full again, at most the Window's share of Burst.)
func (p Policy) TTL() time.Duration {
	if p.Mode == Exclusive {
		return p.LeaseTTL
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
	if p.Mode > Replay {
		return p, invalid("unknown mode %d", p.Mode)
	}
	if p.Window == 0 {
		p.Window = DefaultWindow
	}
	if p.LeaseTTL == 0 {
		p.LeaseTTL = DefaultLeaseTTL
	}
	if p.Window < time.Millisecond {
		return p, invalid("window %v is shorter than 1ms", p.Window)
	}
	if p.LeaseTTL < 3*time.Millisecond {
		return p, invalid("lease TTL %v is shorter than 3ms", p.LeaseTTL)
	}
	if p.Mode == Replay && p.Wait == 0 {
		p.Wait = DefaultReplayWait
	}
	if p.MaxHold < 0 || (p.Wait < 0 && p.Mode != Replay) || p.Timeout < 0 {
		return p, invalid("durations must not be negative")
	}
	if err := p.checkQuota(); err != nil {
		return p, err
	}
	if p.Mode == Replay && p.Reentrant {
		return p, invalid("a Replay policy cannot be Reentrant: a re-entered key has no answer to replay yet")
	}
	if p.Mode == Quota && p.Burst == 0 {
		p.Burst = p.Limit
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
	if p.WhenStoreFails > FailOver {
		return p, invalid("unknown WhenStoreFails %d", p.WhenStoreFails)
	}
	if p.WhenStoreFails == FailDefault {
		p.WhenStoreFails = FailOpen
		if p.Mode == Exclusive || p.Mode == Replay {
			p.WhenStoreFails = FailClosed
		}
	}
	if p.WhenStoreFails == FailOver && p.Fallback == nil {
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

// checkQuota checks the Quota fields: set and usable in Quota mode, unset in
// the others, where they would be silently ignored.
func (p *Policy) checkQuota() error {
	if p.Mode != Quota {
		if p.Limit != 0 || p.Burst != 0 || p.CountOnlyFailures {
			return invalid("Limit, Burst and CountOnlyFailures are for Quota policies, not %v", p.Mode)
		}
		return nil
	}
	if p.Limit < 1 {
		return invalid("a Quota policy needs a Limit of at least 1, got %d", p.Limit)
	}
	if p.Burst < 0 {
		return invalid("quota burst %d is negative", p.Burst)
	}
	burst := p.Burst
	if burst == 0 {
		burst = p.Limit
	}
	return store.Rate{Limit: p.Limit, Window: p.Window, Burst: burst}.Check(0)
}

// rate returns the store.Rate of a Quota policy with its defaults.
func (p *Policy) rate() store.Rate {
	return store.Rate{Limit: p.Limit, Window: p.Window, Burst: p.Burst}
}
