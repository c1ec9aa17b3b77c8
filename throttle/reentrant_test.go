package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func reentrantConfig() throttle.LockConfig {
	return throttle.LockConfig{Name: "reent", Mode: throttle.Exclusive, TTL: 2 * time.Second, Reentrant: true, Fence: true}
}

// TestReentrantNestedDo checks that work holding a key can call code that
// takes the same key with the work's context: the inner Do runs at once with
// two holds and the same fencing token, and the key stays held until the
// outer Do returns.
func TestReentrantNestedDo(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, reentrantConfig())
			other := newLock(t, b.store, reentrantConfig())
			ctx := context.Background()
			key := l.StoredKey("order-42")
			innerRan := false
			err := l.Do(ctx, "order-42", func(outer context.Context) error {
				outerLease := throttle.LeaseFrom(outer)
				assert.Equal(t, 1, outerLease.Holds(), "outer holds")
				err := l.Do(outer, "order-42", func(inner context.Context) error {
					innerRan = true
					lease := throttle.LeaseFrom(inner)
					assert.Equal(t, 2, lease.Holds(), "inner holds")
					assert.Equal(t, outerLease.Fence(), lease.Fence(), "a re-entry keeps the first fence")
					assert.Equal(t, outerLease.Token(), lease.Token(), "inner lease has another owner")
					return nil
				})
				if err != nil {
					return err
				}
				assert.True(t, b.held(t, key), "key freed when the inner Do returned")
				// A different owner is still turned away.
				_, err = other.Acquire(context.Background(), "order-42")
				assert.ErrorIs(t, err, throttle.ErrContended, "foreign owner after inner release")
				return nil
			})
			require.NoError(t, err)
			require.True(t, innerRan, "inner work did not run")
			require.False(t, b.held(t, key), "key still held after the outer Do returned")
		})
	}
}

// TestReentrantWithOwner checks reentrancy through WithOwner and plain
// Acquire/Release: holds count up and down, the key is freed by the last
// release only, and every re-entry refreshes the TTL.
func TestReentrantWithOwner(t *testing.T) {
	b := redisBackend(t)
	l := newLock(t, b.store, reentrantConfig())
	ctx := throttle.WithOwner(context.Background())
	key := l.StoredKey("job")

	first, err := l.Acquire(ctx, "job")
	require.NoError(t, err)
	time.Sleep(800 * time.Millisecond)
	before := b.rdb.PTTL(ctx, key).Val()
	second, err := l.Acquire(ctx, "job")
	require.NoError(t, err)
	after := b.rdb.PTTL(ctx, key).Val()
	require.Equal(t, 1, first.Holds(), "holds of the first")
	require.Equal(t, 2, second.Holds(), "holds of the second")
	require.Greater(t, after, before, "the re-entry did not refresh the PTTL")
	require.NoError(t, second.Release(ctx))
	require.True(t, b.held(t, key), "key freed with one hold left")
	require.NoError(t, first.Release(ctx))
	require.False(t, b.held(t, key), "key still held after the last release")
}

// TestReentrantForeignOwner checks that an owner who does not hold the key
// can neither acquire, release nor extend it, at the lock and at the store
// level, and that a stale lease cannot free its successor's key.
func TestReentrantForeignOwner(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := reentrantConfig()
			l := newLock(t, b.store, c)
			ctx := context.Background()
			owner := throttle.WithOwner(ctx)
			lease, err := l.Acquire(owner, "job")
			require.NoError(t, err)
			defer lease.Release(ctx)

			// Another owner, and a caller with no owner at all.
			for _, other := range []context.Context{throttle.WithOwner(ctx), ctx} {
				_, err := l.Acquire(other, "job")
				require.ErrorIs(t, err, throttle.ErrContended, "foreign acquire")
			}
			stranger := storekit.NewToken()
			out, err := b.store.Release(ctx, lease.Key(), stranger)
			require.NoError(t, err, "foreign release")
			require.Equal(t, store.HeldByOther, out, "foreign release")
			out, err = b.store.Extend(ctx, lease.Key(), stranger, time.Hour)
			require.NoError(t, err, "foreign extend")
			require.Equal(t, store.HeldByOther, out, "foreign extend")
			if b.rdb != nil {
				pttl := b.rdb.PTTL(ctx, lease.Key()).Val()
				require.LessOrEqual(t, pttl, c.TTL, "PTTL after a foreign extend, beyond the lease")
			}
			require.True(t, b.held(t, lease.Key()), "a foreign release freed the key")
			// The owner's hold count is still one: one release frees it.
			require.NoError(t, lease.Release(ctx))
			require.False(t, b.held(t, lease.Key()), "key still held after the owner's release")
		})
	}
}

// TestStaleLeaseCannotFreeSuccessor lets a lease expire, lets another owner
// take the key, and checks that the stale holder's Release and Extend fail
// with ErrNotHeld and leave the successor's key alone.
func TestStaleLeaseCannotFreeSuccessor(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "stale", Mode: throttle.Exclusive, TTL: 50 * time.Millisecond})
			ctx := context.Background()
			stale, err := l.Acquire(ctx, "job")
			require.NoError(t, err)
			var next *throttle.Lease
			require.True(t, waitFor(5*time.Second, func() bool {
				next, err = l.Acquire(ctx, "job")
				return err == nil
			}), "key never expired: %v", err)
			isOnly(t, stale.Extend(ctx, time.Minute), throttle.ErrNotHeld)
			isOnly(t, stale.Release(ctx), throttle.ErrNotHeld)
			require.NoError(t, next.Extend(ctx, time.Minute), "successor lost its key to a stale holder")
			require.NoError(t, next.Release(ctx))
		})
	}
}

// TestNonReentrantNestedDoIsContended documents the default: without
// LockConfig.Reentrant a nested Do on the same key does not block forever,
// it is turned away like any other contender.
func TestNonReentrantNestedDoIsContended(t *testing.T) {
	b := memBackend(t)
	l := newLock(t, b.store, throttle.LockConfig{Name: "plain", Mode: throttle.Exclusive})
	err := l.Do(context.Background(), "job", func(ctx context.Context) error {
		return l.Do(ctx, "job", func(context.Context) error {
			assert.Fail(t, "nested work ran on a non-reentrant key")
			return nil
		})
	})
	isOnly(t, err, throttle.ErrContended)
}

// TestReentryNeverShortensDo: a re-entry with a shorter TTL (through
// another Lock of the same name, whose TTL is a second, on another handle
// on the store) inside Do, which
// holds the key for a minute, neither cuts the hold short nor leaves the
// inner lease believing in a shorter life than the key's.
func TestReentryNeverShortensDo(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	l := newLock(t, st, throttle.LockConfig{Name: "re", Reentrant: true, TTL: time.Minute})
	// As another process's: in one, a store refuses a second config of a name.
	short := newLock(t, &handle{st}, throttle.LockConfig{Name: "re", Reentrant: true, TTL: time.Second})
	err := l.Do(ctx, "k", func(ctx context.Context) error {
		inner, err := short.Acquire(ctx, "k")
		if err != nil {
			return err
		}
		assert.Greater(t, inner.ValidFor(), 30*time.Second, "inner lease: want the key's real TTL of about a minute")
		g, err := st.Acquire(ctx, store.Request{Key: l.StoredKey("k"), Token: storekit.NewToken(), TTL: time.Second})
		assert.NoError(t, err)
		assert.False(t, g.Acquired, "after a 1s re-entry another owner took the key")
		assert.Greater(t, g.Remaining, 30*time.Second, "after a 1s re-entry another owner sees %+v: the minute-long hold was cut short", g)
		return inner.Release(ctx)
	})
	require.NoError(t, err)
}
