package throttle

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// ReplayConfig configures a Replay. Only Name is required.
type ReplayConfig struct {
	// Name names the policy in stored keys and in the RateLimit headers: 1
	// to 64 bytes of printable ASCII without '"' or '\'.
	Name string
	// TTL is the retention: how long a key's first answer is replayed once
	// recorded (Lease.Record), default 5 s; an API taking Idempotency-Key
	// usually keeps answers for a day.
	TTL time.Duration
	// Lease is how long the key stays marked in flight without its holder:
	// the mark is refreshed every Lease/3 while the request runs, so a
	// process that dies mid-request blocks the key's retries for at most a
	// Lease instead of the TTL. Default 10 s or the TTL if shorter; at
	// least 3 ms and at most the TTL.
	Lease time.Duration
	// Wait is how long a duplicate waits for an original still in flight
	// to record its answer: default 5 s, negative for not at all.
	Wait time.Duration
	// Fence gives the first request a fencing token (Lease.Fence).
	Fence bool
	Options
}

// Replay answers a duplicate with the first request's response instead of
// turning it away: the first request of a key runs under the key, marked in
// flight under a lease refreshed while it runs, and, when it succeeds,
// records its response next to the key for the TTL (Lease.Record); a
// duplicate gets that record, waiting for it while the first is in flight.
// A process that dies mid-request leaves the key marked for at most
// ReplayConfig.Lease. It needs a store that keeps records (store.Recorder:
// memstore and redisstore, not redlock) and fails closed by default: an
// order must not be placed twice because the store is down.
type Replay struct {
	l     *limiter
	lease time.Duration
}

// defaultReplayLease is ReplayConfig.Lease's default.
const defaultReplayLease = 10 * time.Second

// NewReplay returns a Replay on st configured by c. It fails with
// store.ErrInvalid when c is not usable or st (or, under FailOver, the
// Fallback) keeps no records.
func NewReplay(st store.Store, c ReplayConfig) (*Replay, error) {
	l, err := newLimiter(st, policy{Name: c.Name, Mode: ModeReplay, TTL: c.TTL, Wait: c.Wait, Fence: c.Fence, Options: c.Options})
	if err != nil {
		return nil, err
	}
	lease := cmp.Or(c.Lease, min(defaultReplayLease, l.p.TTL))
	if lease < minRemoteTTL || lease > l.p.TTL {
		return nil, invalid("policy %q: Lease %v: from %v to the TTL %v", c.Name, c.Lease, minRemoteTTL, l.p.TTL)
	}
	// A request that never records nor releases keeps its mark no longer
	// than the TTL, as before the mark was a lease.
	l.p.MaxHold = l.p.TTL
	return &Replay{l, lease}, nil
}

// Config returns the replay's config with its defaults filled in.
func (r *Replay) Config() ReplayConfig {
	p := r.l.p
	return ReplayConfig{Name: p.Name, TTL: p.TTL, Lease: r.lease, Wait: p.Wait, Fence: p.Fence, Options: p.Options}
}

// Stats returns a snapshot of the replay's counters.
func (r *Replay) Stats() Stats { return r.l.Stats() }

// Claim decides a request. The first request of a key gets a lease, kept
// alive (Lease.KeepAlive) until it is recorded or released: it runs, then
// records its answer with Lease.Record if it succeeded, or releases the
// lease if it failed, so that a retry runs afresh. A duplicate gets the
// holder's record (an empty record is a record); one
// that finds no record yet waits for it up to Wait, woken when the holder
// records or releases (then one waiter gets the key), and then fails with
// a *ContendedError. Claim applies WhenStoreFails (failing open: no lease,
// no record, no error) but turns a shed request away. Under DryRun a
// duplicate gets ErrContended at once.
func (r *Replay) Claim(ctx context.Context, id string) (lease *Lease, record []byte, err error) {
	l := r.l
	lease, record, err = l.claim(ctx, l.request(ctx, id, r.lease)) // a Replay is never Reentrant
	if record != nil {
		l.observe(ctx, Event{Kind: "replayed"})
		return nil, record, nil
	}
	if lease != nil {
		lease.keep = &refresher{}
		lease.keep.start(ctx, lease)
	}
	return lease, nil, l.admitted(ctx, lease != nil && lease.onFallback, 0, err)
}

// refresher runs the KeepAlive of a Replay's in-flight mark until Record or
// Release stops it. A nil refresher does nothing.
type refresher struct {
	mu   sync.Mutex
	stop context.CancelFunc
}

func (r *refresher) start(ctx context.Context, ls *Lease) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop == nil && !ls.released.Load() {
		_, r.stop = ls.KeepAlive(context.WithoutCancel(ctx))
	}
}

// halt stops the refresher and waits for an extension in flight.
func (r *refresher) halt() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
}

// claim is Claim before the store-error policy and the Observer.
func (l *limiter) claim(ctx context.Context, req store.Request) (*Lease, []byte, error) {
	sent := monoNow()
	lease, remaining, err := l.try(ctx, req, sent)
	if lease != nil || err != nil {
		return lease, nil, err
	}
	if l.p.DryRun {
		return nil, nil, &ContendedError{RetryAfter: remaining}
	}
	look := func(ctx context.Context) ([]byte, error) { return l.recorded(ctx, req.Key) }
	rec, err := look(ctx)
	if rec != nil || err != nil {
		return nil, rec, err
	}
	if l.p.Wait <= 0 {
		return nil, nil, &ContendedError{RetryAfter: remaining}
	}
	return l.wait(ctx, req, remaining, monoTime(sent).Add(l.p.Wait), look)
}

// recorded reads key's record (nil: none) from the store, or under
// FailOver from the Fallback's copy while the store is skipped or failing.
func (l *limiter) recorded(ctx context.Context, key string) ([]byte, error) {
	failOver := l.p.WhenStoreFails == FailOver
	if failOver && l.health.skip() {
		return l.readRecord(ctx, l.p.Fallback, key)
	}
	rec, err := l.readRecord(ctx, l.store, key)
	if err != nil && failOver && ctx.Err() == nil {
		if fbRec, fbErr := l.readRecord(ctx, l.p.Fallback, key); fbErr == nil {
			return fbRec, nil
		}
	}
	return rec, err
}

// readRecord is one Recorded call to st.
func (l *limiter) readRecord(ctx context.Context, st store.Store, key string) ([]byte, error) {
	r := st.(store.Recorder) // New checked it
	start := l.since()
	var rec []byte
	var found bool
	err := l.callStore(ctx, st, 0, func(ctx context.Context) (err error) {
		rec, found, err = r.Recorded(ctx, key)
		return err
	})
	l.storeCall(ctx, "recorded", start, callFailed(ctx, err))
	if err != nil {
		return nil, l.storeErr(ctx, st, "recorded", err)
	}
	if !found {
		return nil, nil
	}
	if rec == nil {
		rec = []byte{}
	}
	return rec, nil
}

// Record stores rec as the answer the key's duplicates get from Claim, once
// a Replay's request succeeded, and holds the key for the TTL in the same
// atomic step: the record lives as long as the key. It is written only if
// the lease still holds the key, so a late holder never records over its
// successor's. It fails with ErrNotHeld when the key was lost,
// store.ErrInvalid when the store refuses rec (too large) or keeps no
// records, or ErrStore. It runs even when ctx is cancelled: the client may
// have left, but its retry still wants the answer.
func (ls *Lease) Record(ctx context.Context, rec []byte) error {
	if ls.released.Load() {
		return ErrNotHeld
	}
	r, ok := ls.holder().(store.Recorder)
	if !ok {
		return invalid("%T keeps no records", ls.holder())
	}
	// An extension sent after the record would cut the key back to the lease.
	ls.keep.halt()
	ttl := ls.l.p.TTL
	sent, start := monoNow(), ls.l.since()
	var out store.Outcome
	err := ls.l.callStore(context.WithoutCancel(ctx), ls.holder(), ls.ValidFor(), func(ctx context.Context) (err error) {
		out, err = r.Record(ctx, ls.key, ls.token, rec, ttl)
		return err
	})
	ls.l.storeCall(ctx, "record", start, err)
	if err != nil { // the key is still in flight: the caller may record again
		ls.keep.start(ctx, ls)
	}
	switch {
	case errors.Is(err, store.ErrInvalid):
		ls.l.stats.notKept.Add(1)
		ls.l.logLimited(slog.LevelWarn, "record refused", "throttle: the store refused a Replay response: its duplicates are told it was not kept",
			"bytes", len(rec), "err", err)
		return err
	case err != nil:
		ls.l.stats.storeErrors.Add(1)
		ls.l.logStoreError("record", err)
		return &storeError{op: "record", err: err}
	case out != store.OK: // expired or deleted while the request ran
		ls.l.stats.lost.Add(1)
		ls.l.observe(ctx, Event{Kind: "lost"})
		ls.l.logLimited(slog.LevelWarn, "record lost", "throttle: a Replay key was lost before its response was recorded: its duplicates will run again")
		return ErrNotHeld
	}
	ls.setValid(sent, ttl)
	if m, ok := ls.mirror().(store.Recorder); ok {
		mctx, c := ls.l.detach(ctx, ls.mirror(), nil)
		_, err := m.Record(mctx, ls.key, ls.token, rec, ttl)
		if err = c.end(err); err != nil {
			ls.l.logStoreError("record-fallback", err)
		}
	}
	return nil
}
