package rueidisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestOutage: with Redis stopped, then killed, every call fails (none
// hangs past its context), a Lock failing closed turns requests away with
// ErrStore, and once Redis is back the store serves again without a new
// client.
func TestOutage(t *testing.T) {
	s, srv := newStore(t)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "outage", Options: throttle.Options{WhenStoreFails: throttle.FailClosed}})
	require.NoError(t, err)
	for _, kill := range []bool{false, true} {
		if kill {
			srv.Kill(t)
		} else {
			srv.Stop(t)
		}
		calls := map[string]func(ctx context.Context) error{
			"acquire": func(ctx context.Context) error {
				_, err := s.Acquire(ctx, store.Request{Key: key(t), Token: "t", TTL: time.Second})
				return err
			},
			"acquire-fenced": func(ctx context.Context) error {
				_, err := s.Acquire(ctx, store.Request{Key: key(t), Token: "t", TTL: time.Second, Fence: true})
				return err
			},
			"release": func(ctx context.Context) error { _, err := s.Release(ctx, key(t), "t"); return err },
			"extend": func(ctx context.Context) error {
				_, err := s.Extend(ctx, key(t), "t", time.Second)
				return err
			},
			"quota": func(ctx context.Context) error {
				_, err := s.AllowN(ctx, key(t), store.Rate{Limit: 1, Window: time.Second, Burst: 1}, 1)
				return err
			},
			"watch": func(ctx context.Context) error {
				_, stop, err := s.Watch(ctx, key(t))
				if err == nil {
					stop()
				}
				return err
			},
			"limiter": func(ctx context.Context) error {
				// Anything but ErrStore (an admission, say) is a
				// failure of the test, reported as "succeeded".
				if _, err := l.Admit(ctx, "alice"); !errors.Is(err, throttle.ErrStore) {
					return nil
				}
				return errors.New("turned away")
			},
		}
		for name, call := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			select {
			case err := <-done:
				assert.Error(t, err, "%s with Redis down succeeded", name)
			case <-time.After(10 * time.Second):
				require.Failf(t, "a call hangs", "%s with Redis down hangs", name)
			}
			cancel()
		}
		srv.Restart(t)
		k := key(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			g, err := s.Acquire(context.Background(), store.Request{Key: k, Token: "t", TTL: time.Second, Fence: true})
			if err == nil && g.Acquired {
				break
			}
			require.False(t, time.Now().After(deadline), "no acquisition after the restart: %+v, %v", g, err)
			time.Sleep(20 * time.Millisecond)
		}
		out, err := s.Release(context.Background(), k, "t")
		require.NoError(t, err, "release after the restart")
		require.Equal(t, store.OK, out, "release after the restart")
	}
}

// TestHungRedis: Redis is frozen (SIGSTOP) while a Lock acquires. The
// call ends at Options.Timeout rather than waiting for Redis, and once Redis
// resumes, the key the unanswered command took is freed by the Lock's
// background release: no lock is left that nobody owns.
func TestHungRedis(t *testing.T) {
	s, srv := newStore(t)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "hung", TTL: time.Hour,
		Options: throttle.Options{Timeout: 100 * time.Millisecond, WhenStoreFails: throttle.FailClosed}})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = l.Admit(ctx, "warm-up")
	require.NoError(t, err, "warm-up Admit")
	srv.Pause(t)
	done := make(chan error, 1)
	go func() {
		_, err := l.Admit(ctx, "carol")
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, throttle.ErrStore, "admission against a hung Redis")
	case <-time.After(10 * time.Second):
		require.Fail(t, "admission against a hung Redis is not bounded by the policy's timeout")
	}
	srv.Resume(t)
	// The SET reached Redis before it froze or is read after it wakes:
	// either way the key must end up free well before its hour is over.
	k := storekit.Key("throttle", "hung", "carol")
	deadline := time.Now().Add(15 * time.Second)
	for {
		g, err := s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
		if err == nil && g.Acquired {
			break
		}
		require.False(t, time.Now().After(deadline), "the unanswered acquisition's key stays held: %+v, %v", g, err)
		time.Sleep(50 * time.Millisecond)
	}
}
