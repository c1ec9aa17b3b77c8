package throttle_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// queueStore is a store outside the process (it is not storekit.InMemory)
// whose acquisitions of the key "slow" wait until released, or for their
// context, while every other key is granted at once: a store that answers
// while one caller waits behind a burst.
type queueStore struct {
	brokenStore
	release chan struct{}
	slow    atomic.Int32 // slow calls waiting
}

func (s *queueStore) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if strings.HasSuffix(req.Key, ":slow}") {
		s.slow.Add(1)
		defer s.slow.Add(-1)
		select {
		case <-s.release:
		case <-ctx.Done():
			return store.Grant{}, ctx.Err()
		}
	}
	return store.Grant{Acquired: true, TTL: req.TTL, Holds: 1}, nil
}

// answerWhile makes acquisitions of other keys on l every millisecond until
// stop is closed: the store keeps answering this process.
func answerWhile(t *testing.T, l *throttle.Lock, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			_, err := l.Acquire(context.Background(), "fast-"+time.Now().String())
			assert.NoError(t, err)
		}
	})
	return &wg
}

// TestLoadIsNotAnOutage: a call that waits far longer than Options.Timeout
// while the store answers other calls is neither failed open nor failed
// closed: it gets the store's answer.
func TestLoadIsNotAnOutage(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	l := newLock(t, st, throttle.LockConfig{Name: "load", Options: throttle.Options{Timeout: 20 * time.Millisecond}})
	stop := make(chan struct{})
	wg := answerWhile(t, l, stop)
	defer wg.Wait()
	defer close(stop)

	time.AfterFunc(10*20*time.Millisecond, func() { close(st.release) }) // ten timeouts
	lease, err := l.Admit(context.Background(), "slow")
	require.NoError(t, err)
	require.NotNil(t, lease, "the slow call was let through unguarded instead of waiting for the store")
	s := l.Stats()
	assert.Zero(t, s.FailedOpen)
	assert.Zero(t, s.StoreErrors)
	assert.Zero(t, s.Shed)
}

// TestLoadPastLimitIsShed: a call that waits past the load limit (30
// timeouts) while the store answers others is shed, turned away with
// ErrStore under a config that fails open: never let through.
func TestLoadPastLimitIsShed(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	defer close(st.release)
	l := newLock(t, st, throttle.LockConfig{Name: "shed",
		Options: throttle.Options{Timeout: 5 * time.Millisecond, WhenStoreFails: throttle.FailOpen}})
	stop := make(chan struct{})
	wg := answerWhile(t, l, stop)
	defer wg.Wait()
	defer close(stop)

	lease, err := l.Admit(context.Background(), "slow")
	require.ErrorIs(t, err, throttle.ErrStore)
	assert.Nil(t, lease)
	s := l.Stats()
	assert.Equal(t, uint64(1), s.Shed)
	assert.Zero(t, s.FailedOpen)
}

// TestSilenceIsAnOutage: a store that answers nothing fails the call once
// it has been silent for a timeout (ten while it has never answered this
// process), and WhenStoreFails applies: failing open lets the request through.
func TestSilenceIsAnOutage(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	defer close(st.release)
	l := newLock(t, st, throttle.LockConfig{Name: "silent",
		Options: throttle.Options{Timeout: 20 * time.Millisecond, WhenStoreFails: throttle.FailOpen}})
	// The store answers once, then hangs.
	_, err := l.Acquire(context.Background(), "warm")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		lease, err := l.Admit(context.Background(), "slow")
		assert.Nil(t, lease)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "failing open")
	case <-time.After(5 * time.Second):
		require.Fail(t, "a silent store held the request")
	}
	s := l.Stats()
	assert.Equal(t, uint64(1), s.FailedOpen)
	assert.Zero(t, s.Shed)
}
