package throttle

import (
	"cmp"
	"log/slog"
	"strings"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Mode says how long a lock key stays held and when it is released (see
// LockConfig.Mode), and names the kind of limiter in an Event.
type Mode uint8

const (
	// Dedupe (the zero Mode) holds the key for the TTL, but the middleware
	// releases it at once when the request fails or panics, so that the
	// user can simply try again: for form submissions and retries.
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
	// ModeOverload is the mode of an overload.Limiter, as events name it.
	ModeOverload
)

// String returns the mode's name, such as "dedupe" or "quota".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

var modeNames = [...]string{"dedupe", "cooldown", "exclusive", "quota", "replay", "overload"}

// FailMode is what a request gets when the store fails: it returns an
// error, or stays silent for Options.Timeout. The zero FailMode fails open
// for Dedupe, Cooldown and Quota (a duplicate that slips through beats an
// outage of the endpoint) and closed for Exclusive (its caller relies on
// mutual exclusion) and Replay (a retried order must not be placed twice).
type FailMode uint8

const (
	// FailOpen lets the request through unguarded; the error is logged
	// (at most once a second) and counted in Stats.FailedOpen.
	FailOpen FailMode = iota + 1
	// FailClosed turns the request away with 503 and a Retry-After.
	FailClosed
	// FailOver takes keys in Options.Fallback (a memstore: per process)
	// after three store failures in a row, until the store answers. The
	// fallback mirrors every hold, so that no key is granted twice across
	// the switch; quotas are not mirrored.
	FailOver
)

var failModeNames = [...]string{"default", "open", "closed", "over"}

// The defaults of a config's zero fields. An Exclusive lease is refreshed
// while its work runs: its TTL only bounds how long a crashed holder blocks.
const (
	defaultPrefix     = "throttle"
	defaultTTL        = 5 * time.Second
	defaultLeaseTTL   = 30 * time.Second
	defaultTimeout    = 100 * time.Millisecond
	defaultReplayWait = 5 * time.Second
	defaultMaxName    = 64
)

// Options are what every limiter shares: how its keys are named, how long
// the store may stay silent, and what a request gets when it fails.
type Options struct {
	// Prefix starts every stored key. Default "throttle"; no '{' or '}'.
	Prefix string
	// Timeout is how long a store outside this process may stay silent
	// before a call counts it as failing (default 100 ms; ten Timeouts before
	// its first answer or while this process is starved of CPU); then, or
	// when it returns an error, WhenStoreFails applies. Load is not an
	// outage: while the store answers other calls, a call waits, and only
	// after 30 × Timeout is the request shed (503, never let through). A
	// call whose caller's context ends is given up within about Timeout/4.
	Timeout time.Duration
	// WhenStoreFails decides a request the store cannot answer.
	WhenStoreFails FailMode
	// Fallback is the store FailOver uses while the store fails.
	Fallback store.Store
	// Logger receives store errors and lost leases. Default: slog.Default().
	Logger *slog.Logger
	// Observer, when set, is told of every decision, store call and lease
	// event (see Event): packages promthrottle and otelthrottle. Nil costs nothing.
	Observer Observer
	// DryRun decides, counts, logs and sends the RateLimit headers, but
	// lets every request through (observed as "dry_run_rejected").
	DryRun bool
}

// policy is what a limiter runs with: a LockConfig has every field of a
// QuotaConfig and a ReplayConfig.
type policy LockConfig

// withDefaults fills zero fields and checks the rest.
func (p policy) withDefaults() (policy, error) {
	p.Prefix = cmp.Or(p.Prefix, defaultPrefix)
	p.Timeout = cmp.Or(p.Timeout, defaultTimeout)
	if p.TTL == 0 {
		p.TTL = defaultTTL
		if p.Mode == Exclusive {
			p.TTL = defaultLeaseTTL
		}
	}
	if p.Mode == ModeReplay && p.Wait == 0 {
		p.Wait = defaultReplayWait
	}
	if p.Backoff == nil {
		p.Backoff = exponentialJitter(10*time.Millisecond, time.Second)
	}
	if p.WhenStoreFails == 0 {
		p.WhenStoreFails = FailOpen
		if p.Mode == Exclusive || p.Mode == ModeReplay {
			p.WhenStoreFails = FailClosed
		}
	}
	return p, p.check()
}

// check checks a policy with its defaults filled in.
func (p *policy) check() error {
	switch {
	case !headerToken(p.Name):
		return invalid("policy name %q: 1 to 64 bytes of printable ASCII without quotes or backslashes", p.Name)
	case p.TTL < time.Millisecond || (p.Mode == Exclusive && p.TTL < 3*time.Millisecond):
		return invalid("policy %q: TTL %v is too short", p.Name, p.TTL)
	case p.MaxHold < 0 || (p.Wait < 0 && p.Mode != ModeReplay) || p.Timeout < 0:
		return invalid("policy %q: durations must not be negative", p.Name)
	case strings.ContainsAny(p.Prefix, "{}"):
		return invalid("prefix %q must not contain '{' or '}'", p.Prefix)
	case p.WhenStoreFails > FailOver:
		return invalid("unknown WhenStoreFails %d", p.WhenStoreFails)
	case p.WhenStoreFails == FailOver && p.Fallback == nil:
		return invalid("FailOver needs a Fallback store")
	}
	return p.checkHolders()
}

// checkHolders checks LockConfig.Holders.
func (p *policy) checkHolders() error {
	if p.Holders < 0 || p.Holders > 1 && (p.Mode != Exclusive || p.Reentrant) {
		return invalid("policy %q: Holders %d: above 1 only for an Exclusive lock that is not Reentrant", p.Name, p.Holders)
	}
	return nil
}

// headerToken reports whether name can go into a RateLimit header as it is.
func headerToken(name string) bool {
	ok := name != "" && len(name) <= defaultMaxName
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok = ok && c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	return ok
}

func (p *policy) logger() *slog.Logger { return cmp.Or(p.Logger, slog.Default()) }

// Rate is a quota: Limit requests per Window, in one of two forms.
//
// A smooth rate (the default) is GCRA, as go-redis/redis_rate: up to Burst
// requests at once from a full quota (Burst 0 means Limit), refilled one
// every Window/Limit. It evens out traffic, but counts no window: a client
// that takes Burst at once and then one every Window/Limit gets Burst +
// Limit - 1 within one Window (2×Limit - 1 at the default Burst: 19 of "10
// per minute"; one more when Window/Limit is not a whole microsecond), and
// Limit per Window on average from then on.
//
// A strict rate (Strict) is a sliding window: a request of cost n is
// allowed when the requests admitted in the last Window, with n, are at
// most Limit. No Window, wherever it starts, ever admits more than Limit:
// the most a client gets in one Window is Limit, which a full quota gives
// at once; room comes back as each admission leaves the Window. Its Burst
// must be 0 or Limit, its Limit at most 10,000: the store keeps one
// timestamp per admission of the Window (docs/stores.md), where a smooth
// rate keeps one per key. A refund gives back the oldest admissions in the
// Window.
//
// Name tells apart the rates one Quota decides together (AllowAll: 10 a
// second and 1,000 a day): each has its own stored state, and the RateLimit
// fields name it. An empty Name, or the Quota's own, is the Quota's plain
// rate. A request's rate may change from call to call (a plan's limits):
// the state kept under one Name carries over, within one form (a rate
// turned strict starts with a full quota).
type Rate struct {
	Name   string        // as a policy name: printable ASCII without '"' or '\'; "" for the Quota's own
	Limit  int           // requests of cost 1 refilled per Window
	Window time.Duration // the period of Limit
	Burst  int           // what a full quota allows at once; 0 means Limit
	Strict bool          // a sliding window: never more than Limit in any Window
}

// Store returns r as a store takes it, Burst filled in.
func (r Rate) Store() store.Rate {
	return store.Rate{Limit: r.Limit, Window: r.Window, Burst: cmp.Or(r.Burst, r.Limit), Strict: r.Strict}
}
