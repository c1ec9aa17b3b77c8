package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// remote is a fake remote store: it answers at once without allocating,
// but is not a storekit.InMemory, so that a Lock treats it as it treats
// Redis (a per-call bound on Options.Timeout). Like go-redis, it reads the
// context's deadline (for the socket deadline) and its Done channel (the
// connection pool's wait). held makes every acquisition find the key held.
type remote struct{ held bool }

func (s remote) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	_, _ = ctx.Deadline()
	select {
	case <-ctx.Done():
		return store.Grant{}, ctx.Err()
	default:
	}
	if s.held {
		return store.Grant{Remaining: time.Second}, nil
	}
	return store.Grant{Acquired: true, TTL: req.TTL, Holds: 1}, nil
}

func (remote) Release(context.Context, string, string) (store.Outcome, error) { return store.OK, nil }

func (remote) Extend(context.Context, string, string, time.Duration) (store.Outcome, error) {
	return store.OK, nil
}

// BenchmarkLimiterOverhead measures what a Lock adds to one store call
// on a remote store (the fake above, so that only the Lock is measured):
// "store" is Store.Acquire alone, the floor; "acquire" and "admit" are
// Lock.Acquire and Lock.Admit of a Dedupe lock, "rejected" an Admit that
// finds the key held. The allocations over "store" are the Lock's. One goroutine; ids are built before the timer starts (a new
// one per call, as for a new client); the caller's context is a
// cancellable one, as an HTTP request's is.
func BenchmarkLimiterOverhead(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	b.Run("store", func(b *testing.B) {
		st := remote{}
		req := store.Request{Key: storekit.Key("throttle", "bench", "user-1"), Token: storekit.NewToken(), TTL: time.Second}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.Acquire(ctx, req); err != nil {
				require.NoError(b, err) // only on failure: testify's b.Helper call would be timed
			}
		}
	})
	for _, c := range []struct {
		name string
		held bool
		call func(l *throttle.Lock, id string) error
	}{
		{"acquire", false, func(l *throttle.Lock, id string) error { _, err := l.Acquire(ctx, id); return err }},
		{"admit", false, func(l *throttle.Lock, id string) error { _, err := l.Admit(ctx, id); return err }},
		{"rejected", true, func(l *throttle.Lock, id string) error {
			if _, err := l.Admit(ctx, id); !errors.Is(err, throttle.ErrContended) {
				return fmt.Errorf("admitted a held key, or %w", err)
			}
			return nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := newLock(b, remote{held: c.held}, throttle.LockConfig{Name: "bench", Options: throttle.Options{Timeout: time.Second}})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := c.call(l, ids[i&(len(ids)-1)]); err != nil {
					require.NoError(b, err) // only on failure: testify's b.Helper call would be timed
				}
			}
		})
	}
}

func (remote) Delete(context.Context, ...string) error { return nil }
