package flow

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func TestBeginContended(t *testing.T) {
	for _, c := range []struct {
		name           string
		c              throttle.LockConfig
		window         time.Duration
		policy, prefix string
	}{
		{"dedupe", throttle.LockConfig{Name: "submit"}, 5 * time.Second, `"submit";q=1;w=5`, `"submit";r=0;t=`},
		{"cooldown", throttle.LockConfig{Name: "report", Mode: throttle.Cooldown, TTL: 3 * time.Second}, 3 * time.Second,
			`"report";q=1;w=3`, `"report";r=0;t=`},
		{"exclusive", throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: 20 * time.Second}, 20 * time.Second,
			`"job";q=1;qu="concurrent-requests"`, `"job";r=0;t=`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := Lock(newLock(t, c.c))
			first := mustBegin(t, j, "u1")
			defer first.End(Outcome{})

			parent := context.Background()
			p, ref, ok := j.Begin(parent, Call{ID: "u1"})
			if ok {
				p.End(Outcome{})
				require.FailNow(t, "second call admitted")
			}
			assert.Equal(t, ReasonContended, ref.Reason, "reason")
			require.ErrorIs(t, ref.Err, throttle.ErrContended)
			require.Zero(t, ref.RetryAfter%time.Second, "RetryAfter %v: not whole seconds", ref.RetryAfter)
			assert.GreaterOrEqual(t, ref.RetryAfter, time.Second, "RetryAfter")
			assert.LessOrEqual(t, ref.RetryAfter, c.window, "RetryAfter")
			policy, limit := fieldsOf(&ref.Limits)
			assert.Equal(t, c.policy, policy, "RateLimit-Policy")
			assert.Equal(t, fmt.Sprintf("%s%d", c.prefix, ref.RetryAfter/time.Second), limit, "RateLimit: t is RetryAfter")
			assert.Equal(t, []string{c.c.Name}, ref.Violated(), "violated")
		})
	}
}

// TestRetryAfterRounds (issue 37): a refusal's RetryAfter is what the
// Retry-After field says: whole seconds rounded up, at least 1 s, the
// window for a key held without expiry; RateLimit's t says the same.
func TestRetryAfterRounds(t *testing.T) {
	j := Lock(newLock(t, throttle.LockConfig{Name: "submit", TTL: 5 * time.Second}))
	for held, want := range map[time.Duration]time.Duration{
		4100 * time.Millisecond: 5 * time.Second, 4 * time.Second: 4 * time.Second, time.Millisecond: time.Second,
		0: time.Second, -1: 5 * time.Second,
	} {
		var ref Refusal
		require.False(t, j.refuse(&throttle.ContendedError{RetryAfter: held}, Limits{}, &Permit{}, &ref))
		assert.Equal(t, want, ref.RetryAfter, "held %v", held)
		_, limit := fieldsOf(&ref.Limits)
		assert.Equal(t, fmt.Sprintf(`"submit";r=0;t=%d`, want/time.Second), limit, "held %v", held)
	}
}

func TestBeginStoreFailsOpen(t *testing.T) {
	for _, c := range []throttle.LockConfig{
		{Name: "submit", Options: throttle.Options{Logger: quiet}}, // open by default
		{Name: "submit", Fence: true, Options: throttle.Options{Logger: quiet}},
		{Name: "job", Mode: throttle.Exclusive, Options: throttle.Options{WhenStoreFails: throttle.FailOpen, Logger: quiet}},
	} {
		t.Run(fmt.Sprintf("%v fence=%v", c.Mode, c.Fence), func(t *testing.T) {
			st := &brokenStore{}
			l, err := throttle.NewLock(st, c)
			require.NoError(t, err)
			type ctxKey struct{}
			parent := context.WithValue(context.Background(), ctxKey{}, 1)
			j := Lock(l)
			ran := 0
			ok := j.Serve(parent, Call{ID: "u1"}, new(Refusal), func(p Permit) Outcome {
				ran++
				require.Equal(t, parent, p.Context(), "an unguarded call got a new context")
				policy, limit := fieldsOf(p.Limits())
				require.NotEmpty(t, policy, "RateLimit-Policy of an unguarded call")
				require.Empty(t, limit, "RateLimit of an unguarded call")
				return Outcome{Failed: true}
			})
			require.True(t, ok, "refused under a fail-open lock")
			require.Equal(t, 1, ran, "runs")
			// A panicking call has nothing to release either.
			require.Equal(t, "boom", servePanicking(j, "boom"), "recovered value")
			require.Zero(t, st.releases.Load(), "Release calls of a permit that holds nothing")
			require.Equal(t, uint64(2), l.Stats().FailedOpen, "Stats.FailedOpen")
		})
	}
}

func TestBeginStoreFailsClosed(t *testing.T) {
	for _, c := range []throttle.LockConfig{
		{Name: "submit", Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: quiet}},
		{Name: "job", Mode: throttle.Exclusive, Options: throttle.Options{Logger: quiet}}, // closed by default
	} {
		t.Run(c.Mode.String(), func(t *testing.T) {
			l, err := throttle.NewLock(&brokenStore{}, c)
			require.NoError(t, err)
			_, ref, ok := begin(Lock(l), "u1")
			require.False(t, ok, "admitted under a fail-closed lock")
			assert.Equal(t, ReasonStoreUnavailable, ref.Reason, "reason")
			assert.Equal(t, time.Second, ref.RetryAfter, "RetryAfter")
			require.ErrorIs(t, ref.Err, throttle.ErrStore)
			require.ErrorIs(t, ref.Err, errBroken, "Err wraps the store's error")
			policy, limit := fieldsOf(&ref.Limits)
			require.NotEmpty(t, policy, "RateLimit-Policy")
			require.Empty(t, limit, "RateLimit")
		})
	}
}

func TestBeginCanceled(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	broken, err := throttle.NewLock(&brokenStore{}, throttle.LockConfig{Name: "submit",
		Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: quiet}})
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		ctx  context.Context
		l    *throttle.Lock
		err  error
	}{
		{"canceled", canceled, newLock(t, throttle.LockConfig{Name: "submit"}), context.Canceled},
		{"deadline", expired, newLock(t, throttle.LockConfig{Name: "submit"}), context.DeadlineExceeded},
		// The client is gone: that, not the store, is the reason.
		{"store down", canceled, broken, context.Canceled},
		// Under DryRun too: nothing to let through.
		{"dry run", canceled, newLock(t, throttle.LockConfig{Name: "submit", Options: throttle.Options{DryRun: true}}), context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := Lock(c.l)
			_, ref, ok := j.Begin(c.ctx, Call{ID: "u1"})
			require.False(t, ok, "admitted")
			require.Equal(t, ReasonCanceled, ref.Reason, "reason")
			require.ErrorIs(t, ref.Err, c.err)
			require.Zero(t, ref.RetryAfter, "RetryAfter")
			if c.l != broken {
				require.False(t, isHeld(t, j, "u1"), "a canceled call took the key")
			}
		})
	}
}

func TestBadKey(t *testing.T) {
	l := newLock(t, throttle.LockConfig{Name: "submit", Mode: throttle.Cooldown, TTL: 2 * time.Second})
	obs := &observed{}
	dry := newLock(t, throttle.LockConfig{Name: "submit", Options: throttle.Options{DryRun: true, Observer: obs}})
	bad := errors.New("no identity")
	_, ref, ok := Lock(l).Begin(context.Background(), Call{ID: "u1", Err: bad})
	require.False(t, ok, "admitted without an identity")
	assert.Equal(t, ReasonBadKey, ref.Reason, "reason")
	assert.Zero(t, ref.RetryAfter, "RetryAfter")
	require.ErrorIs(t, ref.Err, bad)
	policy, limit := fieldsOf(&ref.Limits)
	assert.Equal(t, `"submit";q=1;w=2`, policy, "RateLimit-Policy")
	assert.Empty(t, limit, "RateLimit")
	s := l.Stats()
	require.Zero(t, s.Acquired+s.Rejected, "a bad key used the store")

	// A dry run lets it through holding nothing, without fields.
	p, _, ok := Lock(dry).Begin(context.Background(), Call{ID: "u1", Err: bad})
	require.True(t, ok, "a dry run refused a bad key")
	policy, _ = fieldsOf(p.Limits())
	assert.Empty(t, policy, "fields of a bad key let through")
	p.End(Outcome{})
	require.Equal(t, int32(1), obs.n.Load(), "key_error events")
}

func TestDedupeOutcome(t *testing.T) {
	for _, failed := range []bool{false, true} {
		j := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))
		p := mustBegin(t, j, "u1")
		p.End(Outcome{Failed: failed})
		require.Equal(t, !failed, isHeld(t, j, "u1"), "failed %v: the key is held", failed)
	}
}

func TestCooldownKeepsAfterFailure(t *testing.T) {
	j := Lock(newLock(t, throttle.LockConfig{Name: "report", Mode: throttle.Cooldown}))
	p := mustBegin(t, j, "u1")
	p.End(Outcome{Failed: true})
	require.True(t, isHeld(t, j, "u1"), "Cooldown released the key after a failure")
}

type panicValue struct{ n int }

// servePanicking serves a call of u1 that panics with v and returns what
// reached the caller.
func servePanicking(j *Job, v any) (got any) {
	defer func() { got = recover() }()
	j.Serve(context.Background(), Call{ID: "u1"}, new(Refusal), func(Permit) Outcome { panic(v) })
	return nil
}

func TestServePanic(t *testing.T) {
	for _, c := range []struct {
		mode     throttle.Mode
		released bool
	}{{throttle.Dedupe, true}, {throttle.Cooldown, false}, {throttle.Exclusive, true}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			j := Lock(newLock(t, throttle.LockConfig{Name: "submit", Mode: c.mode}))
			want := &panicValue{42}
			require.Same(t, want, servePanicking(j, want), "recovered value: the call's own")
			require.Equal(t, !c.released, isHeld(t, j, "u1"), "after a panic the key is held")
		})
	}
}

func TestServeGoexit(t *testing.T) {
	j := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.Serve(context.Background(), Call{ID: "u1"}, new(Refusal), func(Permit) Outcome { runtime.Goexit(); return Outcome{} })
	}()
	<-done
	require.False(t, isHeld(t, j, "u1"), "a call that called runtime.Goexit kept the key")
}

func TestExclusive(t *testing.T) {
	j := Lock(newLock(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Fence: true}))
	var ctx context.Context
	ok := j.Serve(context.Background(), Call{ID: "c1"}, new(Refusal), func(p Permit) Outcome {
		ctx = p.Context()
		ls := throttle.LeaseFrom(ctx)
		require.NotNil(t, ls, "the call's context carries no lease")
		assert.Positive(t, ls.Fence(), "the lease's fence")
		assert.NoError(t, ctx.Err(), "the call's context ended before it ran")
		assert.True(t, isHeld(t, j, "c1"), "the key is free while the call runs")
		policy, limit := fieldsOf(p.Limits())
		assert.Equal(t, `"job";q=1;qu="concurrent-requests"`, policy)
		assert.Equal(t, `"job";r=0`, limit, "a holder's RateLimit: no t")
		p.End(Outcome{}) // next's permit ends nothing: Serve does
		assert.True(t, isHeld(t, j, "c1"), "End of next's permit released the key")
		return Outcome{} // a success does not keep it either
	})
	require.True(t, ok)
	require.Error(t, ctx.Err(), "the call's context outlives the hold")
	require.False(t, isHeld(t, j, "c1"), "Exclusive kept the key after Serve")
}

func TestBeginContext(t *testing.T) {
	parent := context.Background()
	for _, c := range []struct {
		name  string
		c     throttle.LockConfig
		lease bool
	}{
		{"plain", throttle.LockConfig{Name: "submit"}, false},
		{"fence", throttle.LockConfig{Name: "submit", Fence: true}, true},
		{"reentrant", throttle.LockConfig{Name: "submit", Reentrant: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustBegin(t, Lock(newLock(t, c.c)), "u1")
			defer p.End(Outcome{})
			require.True(t, p.hold.lease != nil || (p.hold.key != throttle.Hold{}), "a lock's permit holds its key")
			require.Equal(t, c.lease, p.hold.lease != nil, "a lease (Fence and Reentrant need one)")
			require.Equal(t, c.lease, throttle.LeaseFrom(p.Context()) != nil, "lease in the context")
			// Adapters skip WithContext when nothing was added.
			if !c.lease {
				require.Equal(t, parent, p.Context(), "a new context with nothing in it")
			}
		})
	}
}

func TestEnd(t *testing.T) {
	j := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))

	// The release runs although the call's context ended.
	parent, cancel := context.WithCancel(context.Background())
	p, _, ok := j.Begin(parent, Call{ID: "u1"})
	require.True(t, ok, "refused")
	cancel()
	p.End(Outcome{Failed: true})
	require.False(t, isHeld(t, j, "u1"), "End did not release with a canceled context")

	// Ending again never frees the key of the call admitted since.
	first := mustBegin(t, j, "u2")
	again := first
	first.End(Outcome{Failed: true})
	second := mustBegin(t, j, "u2")
	defer second.End(Outcome{})
	first.End(Outcome{Failed: true})
	again.End(Outcome{Failed: true}) // a copy made before the first End: token-checked
	require.True(t, isHeld(t, j, "u2"), "a second End released another call's key")
}

// TestLockHolds checks that a Dedupe or Cooldown call on an in-memory
// store holds its key without a lease (Lock.Hold), one with an Observer
// holds a lease, and that both answer, release and count alike: every
// step's outcome and the Lock's Stats are compared.
func TestLockHolds(t *testing.T) {
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown} {
		run := func(obs throttle.Observer) (steps []string, stats throttle.Stats) {
			l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", Mode: mode,
				Options: throttle.Options{Observer: obs}})
			require.NoError(t, err)
			j := Lock(l)
			begin := func(id string) Permit {
				p, ref, ok := begin(j, id)
				if !ok {
					steps = append(steps, fmt.Sprintf("%s refused %s", id, ref.Reason))
					return p
				}
				require.Equal(t, obs == nil, p.hold.lease == nil && (p.hold.key != throttle.Hold{}),
					"%v, Observer %v: a hold without a lease", mode, obs)
				policy, limit := fieldsOf(p.Limits())
				steps = append(steps, fmt.Sprintf("%s admitted %s %s", id, policy, limit))
				return p
			}
			p := begin("a")
			begin("a")
			p.End(Outcome{Failed: true}) // Dedupe frees a, Cooldown keeps it
			p = begin("a")
			p.End(Outcome{})
			begin("a")
			p = begin("b")
			p.End(Outcome{Failed: true, Panicked: true})
			begin("b")
			return steps, l.Stats()
		}
		plain, plainStats := run(nil)
		obs := &observed{}
		seen, seenStats := run(obs)
		assert.Equal(t, plain, seen, "%v: steps without and with an Observer", mode)
		assert.Equal(t, plainStats, seenStats, "%v: stats without and with an Observer", mode)
		assert.NotZero(t, obs.n.Load(), "%v: the Observer was told nothing", mode)
		assert.NotZero(t, plainStats.Acquired, "%v: the script admits", mode)
		assert.NotZero(t, plainStats.Rejected, "%v: the script rejects", mode)
	}
}

// TestStoreFull checks a lock's answer to a full memstore (issue 36): load,
// not an outage, so a refusal with Retry-After, as a shed call, whatever
// WhenStoreFails says; counted as Full, not as a store error.
func TestStoreFull(t *testing.T) {
	for _, fail := range []throttle.FailMode{throttle.FailOpen, throttle.FailClosed} {
		t.Run(fmt.Sprint(fail), func(t *testing.T) {
			l, err := throttle.NewLock(memstore.New(memstore.WithMaxKeys(1)), throttle.LockConfig{Name: "submit",
				Options: throttle.Options{WhenStoreFails: fail, Logger: quiet}})
			require.NoError(t, err)
			j := Lock(l)
			p := mustBegin(t, j, "a")
			require.True(t, (p.hold.key != throttle.Hold{}), "first key admitted without a hold")
			_, ref, ok := begin(j, "b")
			require.False(t, ok, "full store: admitted")
			require.Equal(t, ReasonStoreUnavailable, ref.Reason, "full store")
			require.Equal(t, time.Second, ref.RetryAfter, "full store: RetryAfter")
			st := l.Stats()
			require.Equal(t, uint64(1), st.Full, "%+v", st)
			require.Zero(t, st.StoreErrors+st.FailedOpen, "%+v", st)
		})
	}
}

// TestReasonLabels pins the labels logs and metrics use.
func TestReasonLabels(t *testing.T) {
	for r, want := range map[Reason]string{
		ReasonContended:        "contended",
		ReasonBadKey:           "bad-key",
		ReasonStoreUnavailable: "store-unavailable",
		ReasonCanceled:         "canceled",
		ReasonBadCost:          "bad-cost",
		ReasonInFlight:         "in-flight",
		ReasonKeyReused:        "key-reused",
		ReasonNotKept:          "not-kept",
		ReasonBadRate:          "bad-rate",
		ReasonReplayed:         "replayed",
	} {
		assert.Equal(t, want, string(r))
	}
}
