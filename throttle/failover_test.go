package throttle_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func failOverLock(t *testing.T, mode throttle.Mode) (*throttle.Lock, *switchStore) {
	t.Helper()
	primary := &switchStore{Store: memstore.New()}
	l := newLock(t, primary, throttle.LockConfig{Name: "fo", Mode: mode, TTL: time.Minute,
		Options: throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: memstore.New()}})
	return l, primary
}

// TestFailOverSwitchesOnEvidence: one failed call does not send every key to
// the fallback; three in a row do, until a probe finds the store back.
func TestFailOverSwitchesOnEvidence(t *testing.T) {
	ctx := context.Background()
	l, primary := failOverLock(t, throttle.Dedupe)

	primary.down.Store(true)
	lease, err := l.Admit(ctx, "a")
	require.NoError(t, err, "first request during the outage")
	require.NotNil(t, lease, "first request during the outage")
	_, err = l.Admit(ctx, "a")
	require.ErrorIs(t, err, throttle.ErrContended, "the fallback should still turn duplicates away")
	primary.down.Store(false)
	calls := primary.calls.Load()
	lease, err = l.Admit(ctx, "b")
	require.NoError(t, err, "after one failure")
	require.NotNil(t, lease, "after one failure")
	require.NotEqual(t, calls, primary.calls.Load(), "one failure sent the next request to the fallback without asking the store")

	primary.down.Store(true)
	for i := range 3 {
		_, _ = l.Admit(ctx, "fail-"+string(rune('0'+i)))
	}
	calls = primary.calls.Load()
	_, _ = l.Admit(ctx, "skipped")
	require.Equal(t, calls, primary.calls.Load(), "after three failures in a row the store was still asked within the probe interval")

	primary.down.Store(false)
	require.True(t, waitFor(5*time.Second, func() bool {
		_, _ = l.Admit(ctx, "probe-"+time.Now().String())
		time.Sleep(50 * time.Millisecond)
		return primary.calls.Load() != calls
	}), "the lock never probed the store again")
	before := primary.calls.Load()
	lease, _ = l.Admit(ctx, "c")
	require.NotNil(t, lease, "no lease after recovery")
	require.NotEqual(t, before, primary.calls.Load(), "requests did not go back to the store after it recovered")
	s := l.Stats()
	require.GreaterOrEqual(t, s.Fallback, uint64(2), "Stats %+v", s)
	require.GreaterOrEqual(t, s.StoreErrors, uint64(4), "Stats %+v", s)
}

// TestFailOverOneHolderPerProcess: within one process, FailOver never
// grants a key that a live lease of the Lock holds, whichever store that
// lease came from.
func TestFailOverOneHolderPerProcess(t *testing.T) {
	ctx := context.Background()
	t.Run("held in the store, then the store fails", func(t *testing.T) {
		l, primary := failOverLock(t, throttle.Exclusive)
		lease, err := l.Acquire(ctx, "job")
		require.NoError(t, err)
		primary.down.Store(true)
		_, err = l.Acquire(ctx, "job")
		require.ErrorIs(t, err, throttle.ErrContended, "the fallback granted a key a live lease holds")
		primary.down.Store(false)
		require.NoError(t, lease.Release(ctx))
		l3, err := l.Acquire(ctx, "job")
		require.NoError(t, err, "after release")
		_ = l3.Release(ctx)
	})
	t.Run("held in the fallback, then the store is back", func(t *testing.T) {
		l, primary := failOverLock(t, throttle.Exclusive)
		primary.down.Store(true)
		lease, err := l.Acquire(ctx, "job")
		require.NoError(t, err)
		primary.down.Store(false)
		for range 5 { // whatever the store's health state
			_, err := l.Acquire(ctx, "job")
			require.ErrorIs(t, err, throttle.ErrContended, "the store granted a key a live fallback lease holds")
		}
		require.NoError(t, lease.Release(ctx))
		l3, err := l.Acquire(ctx, "job")
		require.NoError(t, err, "after release")
		_ = l3.Release(ctx)
	})
	t.Run("concurrent, store flapping", func(t *testing.T) {
		l, primary := failOverLock(t, throttle.Exclusive)
		var mu sync.Mutex
		holders := 0
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					primary.down.Store(!primary.down.Load())
					time.Sleep(time.Millisecond)
				}
			}
		})
		var workers sync.WaitGroup
		for range 8 {
			workers.Go(func() {
				for range 200 {
					lease, err := l.Acquire(ctx, "hot")
					if err != nil {
						continue
					}
					mu.Lock()
					holders++
					if !assert.LessOrEqual(t, holders, 1, "two live leases of one key in one process") {
						mu.Unlock()
						return
					}
					mu.Unlock()
					time.Sleep(50 * time.Microsecond)
					mu.Lock()
					holders--
					mu.Unlock()
					_ = lease.Release(ctx)
				}
			})
		}
		workers.Wait()
		close(stop)
		wg.Wait()
	})
}

// lostReply applies every acquisition to its store and then reports an
// error, as a Redis does whose reply was lost or came after the timeout.
type lostReply struct{ store.Store }

func (s lostReply) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if _, err := s.Store.Acquire(ctx, req); err != nil {
		return store.Grant{}, err
	}
	return store.Grant{}, errReplyLost
}

var errReplyLost = errors.New("reply lost")

// TestAmbiguousAcquireIsReleased: an acquisition whose outcome is unknown
// does not leave a lock that nobody owns: the Lock releases its own token
// in the background.
func TestAmbiguousAcquireIsReleased(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Exclusive} {
		t.Run(mode.String(), func(t *testing.T) {
			inner := memstore.New()
			l := newLock(t, lostReply{inner}, throttle.LockConfig{Name: "amb", Mode: mode, TTL: time.Minute})
			_, err := l.Acquire(ctx, "u")
			require.ErrorIs(t, err, throttle.ErrStore)
			waitFree(t, inner, l.StoredKey("u"))
		})
	}
}

// waitFree waits until a newcomer can take key in st.
func waitFree(t *testing.T, st store.Store, key string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		g, err := st.Acquire(context.Background(), store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Second})
		require.NoError(t, err)
		if g.Acquired {
			return
		}
		require.False(t, time.Now().After(deadline), "key %s is still held by a token nobody owns (%v left)", key, g.Remaining)
		time.Sleep(5 * time.Millisecond)
	}
}

// slowReply answers after a delay, as a store does that took longer than
// the lease's validity.
type slowReply struct {
	store.Store
	delay time.Duration
}

func (s slowReply) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	time.Sleep(s.delay)
	return s.Store.Acquire(ctx, req)
}

// TestNoWorkOnSpentValidity: Do and an Exclusive acquisition never start
// work on a grant whose validity ran out before it arrived.
func TestNoWorkOnSpentValidity(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	l := newLock(t, slowReply{inner, 20 * time.Millisecond}, throttle.LockConfig{Name: "late",
		Mode: throttle.Exclusive, TTL: 10 * time.Millisecond, Options: throttle.Options{Timeout: time.Second}})
	ran := false
	err := l.Do(ctx, "job", func(context.Context) error { ran = true; return nil })
	require.False(t, ran, "Do ran the work")
	require.ErrorIs(t, err, throttle.ErrStore)
	waitFree(t, inner, l.StoredKey("job"))
}

// watchBlocks is a Notifier whose Watch never confirms, like a Redis whose
// Pub/Sub connection hangs; it records the deadline it was given.
type watchBlocks struct {
	store.Store
	mu       sync.Mutex
	deadline time.Time
}

func (s *watchBlocks) Watch(ctx context.Context, _ string) (<-chan struct{}, func(), error) {
	s.mu.Lock()
	s.deadline, _ = ctx.Deadline()
	s.mu.Unlock()
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// TestWaitBoundsTheWatch: LockConfig.Wait bounds the whole wait, setting
// up the release notification included.
func TestWaitBoundsTheWatch(t *testing.T) {
	ctx := context.Background()
	st := &watchBlocks{Store: memstore.New()}
	const wait = 50 * time.Millisecond
	l := newLock(t, st, throttle.LockConfig{Name: "w", TTL: time.Minute, Wait: wait, Options: throttle.Options{Timeout: time.Second}})
	_, err := l.Acquire(ctx, "k")
	require.NoError(t, err)
	start := time.Now()
	_, err = l.Acquire(ctx, "k")
	require.ErrorIs(t, err, throttle.ErrContended, "second Acquire")
	st.mu.Lock()
	dl := st.deadline
	st.mu.Unlock()
	// The deadline is computed from the acquisition's own start, a few
	// microseconds after ours: allow for that, far below Options.Timeout.
	require.False(t, dl.IsZero(), "Watch got no deadline")
	require.LessOrEqual(t, dl.Sub(start), wait+wait/2, "Watch's deadline after the start: want LockConfig.Wait %v (Timeout is 1s)", wait)
}

// TestStoreRecoveryLogged: when the store answers again after failing, the
// lock's logger says so once.
func TestStoreRecoveryLogged(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	primary := &switchStore{Store: memstore.New()}
	l := newLock(t, primary, throttle.LockConfig{Name: "rec", Options: throttle.Options{Logger: logger}})
	primary.down.Store(true)
	_, _ = l.Admit(ctx, "a")
	_, _ = l.Admit(ctx, "b")
	primary.down.Store(false)
	_, _ = l.Admit(ctx, "c")
	_, _ = l.Admit(ctx, "d")
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	require.Equal(t, 1, strings.Count(out, "store answers again"), "recovery logged, want once:\n%s", out)
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
