package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func newLimiter(t testing.TB, s throttle.Store, p throttle.Policy) *throttle.Limiter {
	t.Helper()
	l, err := throttle.New(s, p)
	if err != nil {
		t.Fatalf("throttle.New: %v", err)
	}
	return l
}

// TestLimiterModes runs the three modes' admission on a Redlock store, with
// two Limiters on two Stores (two processes): the first request is
// admitted, a duplicate from either process is turned away with a
// Retry-After within the TTL, and the key is free again after the release.
func TestLimiterModes(t *testing.T) {
	ns := startNodes(t, 3, false)
	s1, s2 := ns.store(t), ns.store(t)
	ctx := context.Background()
	const ttl = 5 * time.Second
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown, throttle.Exclusive} {
		t.Run(mode.String(), func(t *testing.T) {
			p := throttle.Policy{Name: "rl-" + mode.String(), Mode: mode, Window: ttl, LeaseTTL: ttl}
			l1, l2 := newLimiter(t, s1, p), newLimiter(t, s2, p)
			lease, err := l1.Admit(ctx, "user-1")
			if err != nil || lease == nil {
				t.Fatalf("first Admit = %v, %v; want a lease", lease, err)
			}
			// The lease must not outlive the quorum's validity, which is
			// at most TTL − drift (the Limiter subtracts its own drift
			// from the Grant.TTL too).
			if v, max := lease.ValidFor(), ttl-store.Drift(ttl)-store.Drift(ttl-store.Drift(ttl)); v <= 0 || v > max {
				t.Fatalf("ValidFor = %v, want in (0, %v]", v, max)
			}
			key := store.Key(throttle.DefaultPrefix, p.Name, "user-1")
			held := 0
			for i := range ns.srvs {
				if ns.holder(t, i, key) != "" {
					held++
				}
			}
			if held < s1.Quorum() {
				t.Fatalf("the admitted key is on %d nodes, want a quorum", held)
			}
			for name, l := range map[string]*throttle.Limiter{"same process": l1, "other process": l2} {
				_, err := l.Admit(ctx, "user-1")
				var ce *throttle.ContendedError
				if !errors.As(err, &ce) || ce.RetryAfter <= 0 || ce.RetryAfter > ttl {
					t.Fatalf("duplicate from the %s = %v; want ErrContended with RetryAfter in (0, %v]", name, err, ttl)
				}
			}
			if lease2, err := l2.Admit(ctx, "user-2"); err != nil || lease2 == nil {
				t.Fatalf("another user = %v, %v; want admitted", lease2, err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if lease, err := l2.Admit(ctx, "user-1"); err != nil || lease == nil {
				t.Fatalf("Admit after the release = %v, %v; want a lease", lease, err)
			}
		})
	}
}

// TestLimiterDoAcrossTTLs: Limiter.Do on a Redlock store keeps the key for
// work that lasts several lease TTLs (KeepAlive extends it on a quorum),
// other processes are refused all along, and the key is free afterwards.
func TestLimiterDoAcrossTTLs(t *testing.T) {
	ns := startNodes(t, 3, false)
	const leaseTTL = 400 * time.Millisecond
	p := throttle.Policy{Name: "rl-job", Mode: throttle.Exclusive, LeaseTTL: leaseTTL}
	worker, other := newLimiter(t, ns.store(t), p), newLimiter(t, ns.store(t), p)
	ctx := context.Background()
	checks := 0
	err := worker.Do(ctx, "job-1", func(work context.Context) error {
		lease := throttle.LeaseFrom(work)
		for start := time.Now(); time.Since(start) < 4*leaseTTL; time.Sleep(leaseTTL / 4) {
			if err := context.Cause(work); err != nil {
				return err
			}
			if v := lease.ValidFor(); v <= 0 {
				t.Errorf("lease validity %v while the work runs", v)
			}
			if _, err := other.Acquire(ctx, "job-1"); !errors.Is(err, throttle.ErrContended) {
				t.Errorf("another process's Acquire while the job runs = %v, want ErrContended", err)
			}
			checks++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do = %v; want the work's nil (the lease must survive %v of work)", err, 4*leaseTTL)
	}
	if checks < 8 {
		t.Fatalf("the work checked %d times", checks)
	}
	lease, err := other.Acquire(ctx, "job-1")
	if err != nil {
		t.Fatalf("Acquire after Do = %v; want the key free", err)
	}
	_ = lease.Release(ctx)
}

// TestLimiterRefusesFence: a Policy that asks for fencing tokens,
// reentrancy or a quota gets ErrInvalid over a Redlock store, never a lease
// or a decision.
func TestLimiterRefusesFence(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	for name, p := range map[string]throttle.Policy{
		"fence":     {Name: "rl-fence", Fence: true, WhenStoreFails: throttle.FailClosed},
		"reentrant": {Name: "rl-reentrant", Reentrant: true, WhenStoreFails: throttle.FailClosed},
		"quota":     {Name: "rl-quota", Mode: throttle.Quota, Limit: 10, Window: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := throttle.New(s, p)
			if err != nil {
				if !errors.Is(err, throttle.ErrInvalid) {
					t.Fatalf("throttle.New = %v, want ErrInvalid", err)
				}
				return // refused up front: better still
			}
			if p.Mode == throttle.Quota {
				t.Fatalf("throttle.New accepted a Quota policy over Redlock")
			}
			lease, err := l.Acquire(context.Background(), "u")
			if lease != nil || !errors.Is(err, throttle.ErrInvalid) {
				t.Fatalf("Acquire = %v, %v; want ErrInvalid", lease, err)
			}
		})
	}
}
