package rueidisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// TestOutage: with Redis stopped, then killed, every call fails (none
// hangs past its context), a Limiter failing closed turns requests away with
// ErrStore, and once Redis is back the store serves again without a new
// client.
func TestOutage(t *testing.T) {
	s, srv := newStore(t)
	l, err := throttle.New(s, throttle.Policy{Name: "outage", WhenStoreFails: throttle.FailClosed})
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
				assert.NotNil(t, err, "%s with Redis down succeeded", name)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s with Redis down hangs", name)
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
			if time.Now().After(deadline) {
				t.Fatalf("no acquisition after the restart: %+v, %v", g, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out, err := s.Release(context.Background(), k, "t"); err != nil || out != store.OK {
			t.Fatalf("release after the restart: %v, %v", out, err)
		}
	}
}

// TestHungRedis: Redis is frozen (SIGSTOP) while a Limiter acquires. The
// call ends at Policy.Timeout rather than waiting for Redis, and once Redis
// resumes, the key the unanswered command took is freed by the Limiter's
// background release: no lock is left that nobody owns.
func TestHungRedis(t *testing.T) {
	s, srv := newStore(t)
	l, err := throttle.New(s, throttle.Policy{Name: "hung", Window: time.Hour, Timeout: 100 * time.Millisecond,
		WhenStoreFails: throttle.FailClosed})
	require.NoError(t, err)
	ctx := context.Background()
	if _, err := l.Admit(ctx, "warm-up"); err != nil {
		t.Fatal(err)
	}
	srv.Pause(t)
	done := make(chan error, 1)
	go func() {
		_, err := l.Admit(ctx, "carol")
		done <- err
	}()
	select {
	case err := <-done:
		require.True(t, errors.Is(err, throttle.ErrStore), "admission against a hung Redis: %v, want ErrStore", err)
	case <-time.After(10 * time.Second):
		t.Fatal("admission against a hung Redis is not bounded by the policy's timeout")
	}
	srv.Resume(t)
	// The SET reached Redis before it froze or is read after it wakes:
	// either way the key must end up free well before its hour is over.
	k := store.Key("throttle", "hung", "carol")
	deadline := time.Now().Add(15 * time.Second)
	for {
		g, err := s.Acquire(ctx, store.Request{Key: k, Token: store.NewToken(), TTL: time.Minute})
		if err == nil && g.Acquired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unanswered acquisition's key stays held: %+v, %v", g, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
