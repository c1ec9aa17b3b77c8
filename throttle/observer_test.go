package throttle_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []throttle.Event
}

func (r *recorder) Observe(_ context.Context, e throttle.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events so far and forgets them.
func (r *recorder) take() []throttle.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// kinds returns the kinds of events, store calls as "store_call:op".
func kinds(events []throttle.Event) []string {
	var out []string
	for _, e := range events {
		k := e.Kind
		if e.Kind == "store_call" {
			k += ":" + e.Op
			if e.Err {
				k += "!"
			}
		}
		out = append(out, k)
	}
	return out
}

func TestObserverAdmissions(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	l := newLock(t, memstore.New(), throttle.LockConfig{Name: "obs", Options: throttle.Options{Observer: rec}})
	lease, err := l.Admit(ctx, "u1")
	require.NoError(t, err)
	_, err = l.Admit(ctx, "u1")
	require.ErrorIs(t, err, throttle.ErrContended)
	require.NoError(t, lease.Release(ctx))
	events := rec.take()
	want := []string{"store_call:acquire", "admitted", "store_call:acquire", "rejected", "store_call:release"}
	require.Equal(t, want, kinds(events))
	for _, e := range events {
		require.Equal(t, "obs", e.Policy, "event %+v lacks the policy", e)
		require.Equal(t, throttle.Dedupe, e.Mode, "event %+v lacks the mode", e)
		if e.Kind == "store_call" {
			require.Positive(t, e.Latency, "store call without a latency: %+v", e)
		}
	}
	require.Positive(t, events[3].RetryAfter, "rejection's RetryAfter")
	require.LessOrEqual(t, events[3].RetryAfter, 5*time.Second, "rejection's RetryAfter")
}

func TestObserverDryRunAndQuota(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "q", Options: throttle.Options{DryRun: true, Observer: rec}})
	rate := throttle.Rate{Limit: 1, Window: time.Hour}
	d, err := q.Admit(ctx, "u1", rate, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	_, err = q.Admit(ctx, "u1", rate, 1)
	require.ErrorIs(t, err, throttle.ErrContended)
	events := rec.take()
	want := []string{"store_call:quota", "admitted", "store_call:quota", "dry_run_rejected"}
	require.Equal(t, want, kinds(events))
	require.Equal(t, 1, events[1].Cost, "events %+v", events)
	require.Positive(t, events[3].RetryAfter, "events %+v", events)
	for _, e := range events {
		require.Equal(t, "q", e.Policy, "event %+v lacks the policy", e)
		require.Equal(t, throttle.ModeQuota, e.Mode, "event %+v lacks the mode", e)
	}
}

func TestObserverReplay(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	r := newReplay(t, memstore.New(), throttle.ReplayConfig{Name: "r", Wait: -1, Options: throttle.Options{Observer: rec}})
	lease, _, err := r.Claim(ctx, "u1")
	require.NoError(t, err)
	_, _, err = r.Claim(ctx, "u1")
	require.ErrorIs(t, err, throttle.ErrContended)
	require.NoError(t, lease.Record(ctx, []byte("answer")))
	_, got, err := r.Claim(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, "answer", string(got))
	events := rec.take()
	want := []string{"store_call:acquire", "admitted", "store_call:acquire", "store_call:recorded", "rejected",
		"store_call:record", "store_call:acquire", "store_call:recorded", "replayed"}
	require.Equal(t, want, kinds(events))
	for _, e := range events {
		require.Equal(t, "r", e.Policy, "event %+v lacks the policy", e)
		require.Equal(t, throttle.ModeReplay, e.Mode, "event %+v lacks the mode", e)
	}
}

func TestObserverStoreFails(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		mode throttle.FailMode
		want []string
	}{
		{throttle.FailOpen, []string{"store_call:acquire!", "failed_open"}},
		{throttle.FailClosed, []string{"store_call:acquire!", "failed_closed"}},
	} {
		rec := &recorder{}
		l := newLock(t, brokenStore{}, throttle.LockConfig{Name: "down",
			Options: throttle.Options{WhenStoreFails: c.mode, Observer: rec, Logger: quiet}})
		_, _ = l.Admit(ctx, "u1")
		require.Equal(t, c.want, kinds(rec.take()), "%v", c.mode)
	}
	// FailOver: the fallback admits, and after three failures in a row the
	// Lock switches to it, once.
	rec := &recorder{}
	l := newLock(t, brokenStore{}, throttle.LockConfig{Name: "over", Options: throttle.Options{
		WhenStoreFails: throttle.FailOver, Fallback: memstore.New(), Observer: rec, Logger: quiet}})
	for _, id := range []string{"a", "b", "c", "d"} {
		_, err := l.Admit(ctx, id)
		require.NoError(t, err)
	}
	got := kinds(rec.take())
	require.Equal(t, 4, count(got, "fallback"), "events %v: fallback admissions", got)
	require.Equal(t, 1, count(got, "fallback_on"), "events %v: fallback switched on", got)
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func TestObserverDo(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	l := newLock(t, memstore.New(), throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: 30 * time.Millisecond,
		Options: throttle.Options{Observer: rec}})
	err := l.Do(ctx, "c1", func(context.Context) error {
		time.Sleep(40 * time.Millisecond) // past one refresh at TTL/3
		return errors.New("sync failed")
	})
	require.Error(t, err, "Do lost the work's error")
	events := rec.take()
	got := kinds(events)
	require.GreaterOrEqual(t, count(got, "extended"), 1, "events %v: want extensions", got)
	require.Equal(t, "released", got[len(got)-1], "events %v: want a release last", got)
	last := events[len(events)-1]
	require.Equal(t, "failed", last.Reason, "release %+v", last)
	require.GreaterOrEqual(t, last.Hold, 40*time.Millisecond, "release %+v: want the hold time", last)
	func() {
		defer func() { _ = recover() }()
		_ = l.Do(ctx, "c2", func(context.Context) error { panic("boom") })
	}()
	e := rec.take()
	require.NotEmpty(t, e)
	require.Equal(t, "released", e[len(e)-1].Kind, "events after a panic %v", kinds(e))
	require.Equal(t, "panic", e[len(e)-1].Reason, "events after a panic %v", kinds(e))
}

func TestModeNames(t *testing.T) {
	for m, want := range map[throttle.Mode]string{throttle.Dedupe: "dedupe", throttle.Cooldown: "cooldown",
		throttle.Exclusive: "exclusive", throttle.ModeQuota: "quota", throttle.ModeReplay: "replay",
		throttle.ModeOverload: "overload", 200: "unknown"} {
		assert.Equal(t, want, m.String())
	}
}

// BenchmarkObserver measures Lock.Admit plus Lease.Release on a memory
// store, one goroutine, b.N distinct keys, with no Observer and with one
// that does nothing: what the events cost the core (two clock readings
// per store call, and the calls).
func BenchmarkObserver(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  throttle.Observer
	}{{"none", nil}, {"noop", noop{}}} {
		b.Run(c.name, func(b *testing.B) {
			l := newLock(b, memstore.New(), throttle.LockConfig{Name: "bench", Options: throttle.Options{Observer: c.obs}})
			ids := distinctIDs(b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				lease, err := l.Admit(ctx, ids[i])
				if err != nil {
					require.NoError(b, err) // only on failure: testify's b.Helper call would be timed
				}
				_ = lease.Release(ctx)
			}
		})
	}
}

type noop struct{}

func (noop) Observe(context.Context, throttle.Event) {}

// distinctIDs returns n user ids, built before a benchmark's timer.
func distinctIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	return ids
}
