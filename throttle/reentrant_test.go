package throttle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func reentrantPolicy() throttle.Policy {
	return throttle.Policy{Name: "reent", Mode: throttle.Exclusive, LeaseTTL: 2 * time.Second, Reentrant: true, Fence: true}
}

// TestReentrantNestedDo checks that work holding a key can call code that
// takes the same key with the work's context: the inner Do runs at once with
// two holds and the same fencing token, and the key stays held until the
// outer Do returns.
func TestReentrantNestedDo(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, reentrantPolicy())
			other := newLimiter(t, b.store, reentrantPolicy())
			ctx := context.Background()
			key := l.StoredKey("order-42")
			innerRan := false
			err := l.Do(ctx, "order-42", func(outer context.Context) error {
				outerLease := throttle.LeaseFrom(outer)
				if outerLease.Holds() != 1 {
					t.Errorf("outer holds %d, want 1", outerLease.Holds())
				}
				err := l.Do(outer, "order-42", func(inner context.Context) error {
					innerRan = true
					lease := throttle.LeaseFrom(inner)
					if lease.Holds() != 2 {
						t.Errorf("inner holds %d, want 2", lease.Holds())
					}
					if lease.Fence() != outerLease.Fence() {
						t.Errorf("inner fence %d, outer %d: a re-entry keeps the first fence", lease.Fence(), outerLease.Fence())
					}
					if lease.Token() != outerLease.Token() {
						t.Error("inner lease has another owner")
					}
					return nil
				})
				if err != nil {
					return err
				}
				if !b.held(t, key) {
					t.Error("key freed when the inner Do returned")
				}
				// A different owner is still turned away.
				if _, err := other.Acquire(context.Background(), "order-42"); !errors.Is(err, throttle.ErrContended) {
					t.Errorf("foreign owner after inner release: %v, want ErrContended", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !innerRan {
				t.Fatal("inner work did not run")
			}
			if b.held(t, key) {
				t.Fatal("key still held after the outer Do returned")
			}
		})
	}
}

// TestReentrantWithOwner checks reentrancy through WithOwner and plain
// Acquire/Release: holds count up and down, the key is freed by the last
// release only, and every re-entry refreshes the TTL.
func TestReentrantWithOwner(t *testing.T) {
	b := redisBackend(t)
	l := newLimiter(t, b.store, reentrantPolicy())
	ctx := throttle.WithOwner(context.Background())
	key := l.StoredKey("job")

	first, err := l.Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond)
	before := b.rdb.PTTL(ctx, key).Val()
	second, err := l.Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	after := b.rdb.PTTL(ctx, key).Val()
	if second.Holds() != 2 || first.Holds() != 1 {
		t.Fatalf("holds %d then %d, want 1 then 2", first.Holds(), second.Holds())
	}
	if after <= before {
		t.Fatalf("PTTL %v before the re-entry, %v after: the re-entry did not refresh it", before, after)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.held(t, key) {
		t.Fatal("key freed with one hold left")
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if b.held(t, key) {
		t.Fatal("key still held after the last release")
	}
}

// TestReentrantForeignOwner checks that an owner who does not hold the key
// can neither acquire, release nor extend it, at the limiter and at the
// store level, and that a stale lease cannot free its successor's key.
func TestReentrantForeignOwner(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			p := reentrantPolicy()
			l := newLimiter(t, b.store, p)
			ctx := context.Background()
			owner := throttle.WithOwner(ctx)
			lease, err := l.Acquire(owner, "job")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release(ctx)

			// Another owner, and a caller with no owner at all.
			for _, c := range []context.Context{throttle.WithOwner(ctx), ctx} {
				if _, err := l.Acquire(c, "job"); !errors.Is(err, throttle.ErrContended) {
					t.Fatalf("foreign acquire: %v, want ErrContended", err)
				}
			}
			stranger := store.NewToken()
			if out, err := b.store.Release(ctx, lease.Key(), stranger); err != nil || out != store.HeldByOther {
				t.Fatalf("foreign release: %v, %v; want held-by-other", out, err)
			}
			if out, err := b.store.Extend(ctx, lease.Key(), stranger, time.Hour); err != nil || out != store.HeldByOther {
				t.Fatalf("foreign extend: %v, %v; want held-by-other", out, err)
			}
			if b.rdb != nil {
				if pttl := b.rdb.PTTL(ctx, lease.Key()).Val(); pttl > p.LeaseTTL {
					t.Fatalf("PTTL %v after a foreign extend, beyond the lease %v", pttl, p.LeaseTTL)
				}
			}
			if !b.held(t, lease.Key()) {
				t.Fatal("a foreign release freed the key")
			}
			// The owner's hold count is still one: one release frees it.
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if b.held(t, lease.Key()) {
				t.Fatal("key still held after the owner's release")
			}
		})
	}
}

// TestStaleLeaseCannotFreeSuccessor lets a lease expire, lets another owner
// take the key, and checks that the stale holder's Release and Extend fail
// with ErrNotHeld and leave the successor's key alone.
func TestStaleLeaseCannotFreeSuccessor(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			p := throttle.Policy{Name: "stale", Mode: throttle.Exclusive, LeaseTTL: 50 * time.Millisecond}
			l := newLimiter(t, b.store, p)
			ctx := context.Background()
			stale, err := l.Acquire(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			var next *throttle.Lease
			if !waitFor(5*time.Second, func() bool {
				next, err = l.Acquire(ctx, "job")
				return err == nil
			}) {
				t.Fatalf("key never expired: %v", err)
			}
			isOnly(t, stale.Extend(ctx, time.Minute), throttle.ErrNotHeld)
			isOnly(t, stale.Release(ctx), throttle.ErrNotHeld)
			if err := next.Extend(ctx, time.Minute); err != nil {
				t.Fatalf("successor lost its key to a stale holder: %v", err)
			}
			if err := next.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNonReentrantNestedDoIsContended documents the default: without
// Policy.Reentrant a nested Do on the same key does not block forever, it is
// turned away like any other contender.
func TestNonReentrantNestedDoIsContended(t *testing.T) {
	b := memBackend(t)
	l := newLimiter(t, b.store, throttle.Policy{Name: "plain", Mode: throttle.Exclusive})
	err := l.Do(context.Background(), "job", func(ctx context.Context) error {
		return l.Do(ctx, "job", func(context.Context) error {
			t.Error("nested work ran on a non-reentrant key")
			return nil
		})
	})
	isOnly(t, err, throttle.ErrContended)
}

// TestReentryNeverShortensDo: a re-entry through the policy's Window inside
// Do, which holds the key for LeaseTTL, neither cuts the hold short nor
// leaves the inner lease believing in a shorter life than the key's.
func TestReentryNeverShortensDo(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	l := newLimiter(t, st, throttle.Policy{Name: "re", Reentrant: true, Window: time.Second, LeaseTTL: time.Minute})
	err := l.Do(ctx, "k", func(ctx context.Context) error {
		inner, err := l.Acquire(ctx, "k")
		if err != nil {
			return err
		}
		if v := inner.ValidFor(); v <= 30*time.Second {
			t.Errorf("inner lease valid for %v, want the key's real TTL of about a minute", v)
		}
		g, err := st.Acquire(ctx, store.Request{Key: l.StoredKey("k"), Token: store.NewToken(), TTL: time.Second})
		if err != nil || g.Acquired || g.Remaining <= 30*time.Second {
			t.Errorf("after a 1s re-entry another owner sees %+v, %v: the minute-long hold was cut short", g, err)
		}
		return inner.Release(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}
