package throttle

import (
	"log/slog"
	"strings"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Mode says how long a lock key stays held and when it is released (see
// LockConfig.Mode), and names the kind of limiter in an Event.
type Mode uint8

const (
	// Dedupe (the zero Mode) holds the key for the TTL after a request is
	// admitted, but the middleware releases it at once when the request
	// fails or panics, so that the user can simply try again. For form
	// submissions and client or proxy retries.
	Dedupe Mode = iota
	// Cooldown holds the key for the whole TTL whatever the outcome: one
	// request per key per window, for password-reset mails.
	Cooldown
	// Exclusive holds the key while the work runs, under a lease of TTL
	// refreshed every TTL/3, and releases it when the work returns: one
	// request or job per key at a time. It fails closed by default.
	Exclusive
	// ModeQuota is the mode of a Quota, as events name it.
	ModeQuota
	// ModeReplay is the mode of a Replay, as events name it.
	ModeReplay
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Dedupe:
		return "dedupe"
	case Cooldown:
		return "cooldown"
	case Exclusive:
		return "exclusive"
	case ModeQuota:
		return "quota"
	case ModeReplay:
		return "replay"
	}
	return "unknown"
}

// FailMode is what a request gets when the store fails: it returns an
// error, or stays silent for Options.Timeout (a store that answers, if
// slowly, is not failing). The zero FailMode fails open for Dedupe,
// Cooldown and Quota (a duplicate that slips through beats an outage of the
// endpoint) and closed for Exclusive (its caller relies on mutual
// exclusion) and Replay (a retried order must not be placed twice).
type FailMode uint8

// failDefault is the zero FailMode, filled in by the mode.
const failDefault FailMode = 0

const (
	// FailOpen lets the request through unguarded; the error is logged
	// (at most once a second) and counted in Stats.FailedOpen.
	FailOpen FailMode = iota + 1
	// FailClosed turns the request away with 503 and a Retry-After.
	FailClosed
	// FailOver takes keys in Options.Fallback (a memstore: per process)
	// after three store failures in a row, and goes back once the store
	// answers. The fallback mirrors every hold, so that no key is granted
	// twice across the switch. Quotas are not mirrored: while the store
	// fails, a user may get one quota per process.
	FailOver
)

// String returns the fail mode's name: "default", "open", "closed" or "over".
func (f FailMode) String() string {
	if int(f) < len(failModeNames) {
		return failModeNames[f]
	}
	return "unknown"
}

var failModeNames = [...]string{"default", "open", "closed", "over"}

// DefaultPrefix starts every stored key unless Options.Prefix says
// otherwise: with it, a store's keys can be told from the application's.
const DefaultPrefix = "throttle"

// Defaults of the other zero fields of a config.
const (
	// defaultTTL is how long a Dedupe or Cooldown key is held, and how long
	// a Replay answer is kept: long enough to cover a double click and a
	// client's quick retries.
	defaultTTL = 5 * time.Second
	// defaultLeaseTTL is an Exclusive key's lease, refreshed while the work
	// runs: it only bounds how long a crashed holder blocks the others.
	defaultLeaseTTL = 30 * time.Second
	// defaultTimeout is how long a store outside this process may stay
	// silent before it counts as failing.
	defaultTimeout = 100 * time.Millisecond
	// defaultReplayWait is how long a Replay duplicate waits for an
	// original still in flight.
	defaultReplayWait = 5 * time.Second
)

// Options are what every limiter shares: how its keys are named, how long
// the store may stay silent, and what a request gets when it fails.
type Options struct {
	// Prefix starts every stored key. Default "throttle"; no '{' or '}'.
	Prefix string
	// Timeout is how long a store outside this process may stay silent
	// before a call counts it as failing (default 100 ms); then, or when
	// it returns an error, WhenStoreFails applies. Load is not an outage:
	// while the store answers other calls of this process, a call waits,
	// and only after 30 × Timeout is the request shed (503, never let
	// through). Before the store's first answer, or while this process is
	// starved of CPU, silence must last ten Timeouts.
	Timeout time.Duration
	// WhenStoreFails decides a request the store cannot answer (see
	// FailMode).
	WhenStoreFails FailMode
	// Fallback is the store FailOver uses while the store fails.
	Fallback Store
	// Logger receives store errors and lost leases. Default: the
	// slog.Default() of the moment.
	Logger *slog.Logger
	// Observer, when set, is told of every decision, store call and lease
	// event (see Event), for metrics and traces: packages promthrottle and
	// otelthrottle. Nil costs nothing.
	Observer Observer
	// DryRun decides, counts, logs and sends the RateLimit headers, but
	// lets every request through (observed as "dry_run_rejected"): watch
	// what a new policy would reject before it rejects anything.
	DryRun bool
}

// policy is what a limiter runs with, defaults filled in: a LockConfig has
// every field of a QuotaConfig and a ReplayConfig.
type policy LockConfig

// withDefaults fills zero fields and checks the rest.
func (p policy) withDefaults() (policy, error) {
	if err := checkName(p.Name); err != nil {
		return p, err
	}
	if err := p.durations(); err != nil {
		return p, err
	}
	if p.Prefix == "" {
		p.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(p.Prefix, "{}") {
		return p, invalid("prefix %q must not contain '{' or '}'", p.Prefix)
	}
	if p.Timeout == 0 {
		p.Timeout = defaultTimeout
	}
	return p, p.failMode()
}

// durations fills in and checks the TTL, the waits and the timeout.
func (p *policy) durations() error {
	if p.TTL == 0 {
		p.TTL = defaultTTL
		if p.Mode == Exclusive {
			p.TTL = defaultLeaseTTL
		}
	}
	if p.Mode == ModeReplay && p.Wait == 0 {
		p.Wait = defaultReplayWait
	}
	switch {
	case p.TTL < time.Millisecond || (p.Mode == Exclusive && p.TTL < 3*time.Millisecond):
		return invalid("policy %q: TTL %v is too short", p.Name, p.TTL)
	case p.MaxHold < 0 || (p.Wait < 0 && p.Mode != ModeReplay) || p.Timeout < 0:
		return invalid("policy %q: durations must not be negative", p.Name)
	}
	return nil
}

// checkName checks a policy name: 1 to 64 bytes of printable ASCII without
// '"' or '\', so that it can be put in a RateLimit header as it is.
func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return invalid("policy name must be 1 to 64 bytes, got %d", len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return invalid("policy name %q: only printable ASCII without quotes or backslashes", name)
		}
	}
	return nil
}

// failMode fills in and checks WhenStoreFails.
func (p *policy) failMode() error {
	switch {
	case p.WhenStoreFails > FailOver:
		return invalid("unknown WhenStoreFails %d", p.WhenStoreFails)
	case p.WhenStoreFails == FailOver && p.Fallback == nil:
		return invalid("FailOver needs a Fallback store")
	case p.WhenStoreFails != failDefault:
	case p.Mode == Exclusive || p.Mode == ModeReplay:
		p.WhenStoreFails = FailClosed
	default:
		p.WhenStoreFails = FailOpen
	}
	if p.Backoff == nil {
		p.Backoff = ExponentialJitter(10*time.Millisecond, time.Second)
	}
	return nil
}

// logger returns the policy's Logger, or the default one.
func (p *policy) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// Rate is a quota: Limit requests per Window, of which up to Burst may come
// at once from a full quota (Burst 0 means Limit), refilled smoothly, one
// request every Window/Limit. It is a value, so that each request may be
// given its own: a rate per plan or per tier.
type Rate = store.Rate
