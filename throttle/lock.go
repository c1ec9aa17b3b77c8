package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// LockConfig configures a Lock. Only Name is required: LockConfig{Name:
// "submit"} is a working Dedupe lock with a 5 s window.
type LockConfig struct {
	// Name names the lock in stored keys and in the RateLimit headers: 1
	// to 64 bytes of printable ASCII without '"' or '\'.
	Name string
	// Mode is Dedupe (the zero value), Cooldown or Exclusive: how long the
	// middleware (package guard) holds a request's key.
	Mode Mode
	// TTL is how long a key is held: the window of a Dedupe or Cooldown
	// key (default 5 s), the lease of an Exclusive key (default 30 s) and of
	// Do, refreshed every TTL/3 while the work runs. At least 3 ms on a
	// store outside this process.
	TTL time.Duration
	// MaxHold, when positive, caps how long Do and an Exclusive request
	// keep a key; then the work's context is cancelled with ErrLost.
	MaxHold time.Duration
	// Wait is how long an acquisition waits for a held key, retrying with
	// Backoff and woken early by a release, before it gives up with
	// ErrContended. Zero means try once.
	Wait time.Duration
	// Backoff paces the retries of a waiting acquisition. Default: a
	// random pause up to 10 ms, doubling with each retry up to 1 s.
	Backoff Backoff
	// Fence asks every acquisition for a fencing token (Lease.Fence).
	Fence bool
	// Reentrant lets the owner carried in a context (WithOwner) take a key
	// it already holds; the key is freed when every hold is released.
	Reentrant bool
	// Holders, above 1, lets an Exclusive lock's key be held by up to
	// Holders requests or jobs at once (an export that may run twice per
	// user at once), each under its own lease; a lease whose holder died
	// frees its place when it ends. 0 and 1 mean one holder. It excludes
	// Reentrant, and a Redlock store refuses it.
	Holders int
	Options
}

// Lock holds keys: one request or one job per key at a time, or per window.
// It is safe for concurrent use; make one per policy and share it.
type Lock struct{ l *limiter }

// NewLock returns a Lock on st configured by c. It fails with
// store.ErrInvalid when c is not usable, or when st cannot keep what c asks
// for (a Redlock store refuses Fence and Reentrant).
func NewLock(st store.Store, c LockConfig) (*Lock, error) {
	if c.Mode > Exclusive {
		return nil, invalid("lock %q: mode %v is not a lock's (Dedupe, Cooldown or Exclusive)", c.Name, c.Mode)
	}
	l, err := newLimiter(st, policy(c))
	if err != nil {
		return nil, err
	}
	return &Lock{l}, nil
}

// Acquire takes the key for id for the TTL. It fails with a *ContendedError
// when somebody holds the key (after waiting up to Wait), with ErrStore when
// the store failed, or with ctx.Err().
func (k *Lock) Acquire(ctx context.Context, id string) (*Lease, error) {
	return k.l.acquire(ctx, id, k.l.p.TTL)
}

// Admit is Acquire with WhenStoreFails applied, for a request that must be
// answered now: package guard builds the middleware on it. A lease admits
// the request; an error turns it away; nil and no error mean that the store
// failed open: the request goes ahead unguarded. Under DryRun, ErrContended
// says what would have happened; the caller lets the request through.
func (k *Lock) Admit(ctx context.Context, id string) (*Lease, error) {
	lease, err := k.l.acquire(ctx, id, k.l.p.TTL)
	return lease, k.l.admitted(ctx, lease != nil && lease.onFallback, 0, err)
}

// Do runs fn while holding the key for id, for work such as background
// jobs: it acquires (waiting up to Wait), keeps the lease alive while fn
// runs, and releases when fn returns or panics. fn's context carries the
// lease (LeaseFrom) and is cancelled with cause ErrLost if the lease is lost.
// Do returns the acquisition's error when fn did not run; otherwise fn's
// error, joined with ErrLost when the lease was lost meanwhile (once: fn
// may return context.Cause of its context).
func (k *Lock) Do(ctx context.Context, id string, fn func(context.Context) error) error {
	l := k.l
	lease, err := l.acquire(ctx, id, l.p.TTL)
	if err != nil {
		return err
	}
	work, stop := lease.KeepAlive(ctx)
	finished := false
	defer func() {
		if !finished { // fn panicked or called runtime.Goexit
			stop()
			if lease.Release(ctx) == nil {
				l.observe(ctx, Event{Kind: "released", Hold: lease.held(), Reason: "panic"})
			}
		}
	}()
	err = fn(work)
	finished = true
	stop()
	lost := context.Cause(work)
	if !errors.Is(lost, ErrLost) {
		lost = nil
	}
	rerr := lease.Release(ctx)
	if rerr == nil {
		reason := "done"
		if err != nil {
			reason = "failed"
		}
		l.observe(ctx, Event{Kind: "released", Hold: lease.held(), Reason: reason})
	}
	if lost == nil && errors.Is(rerr, ErrNotHeld) {
		lost = fmt.Errorf("%w: the key had expired or changed hands when the work returned", ErrLost)
	}
	if lost != nil && !errors.Is(err, lost) { // fn may return context.Cause(work) itself
		return errors.Join(err, lost)
	}
	if err == nil && rerr != nil {
		return rerr
	}
	return err
}

// Config returns the lock's config with its defaults filled in.
func (k *Lock) Config() LockConfig { return LockConfig(k.l.p) }

// Stats returns a snapshot of the lock's counters.
func (k *Lock) Stats() Stats { return k.l.Stats() }
