package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkNearCache measures a flood of refusals through the public API
// against a real redis-server, beside the floor of one round trip, on one
// client per store:
//
//   - raw:   client.SetNX of one held key (refused), one plain command;
//   - lock:  Lock.Admit of one id that another store holds, answered by
//     the near cache once the first refusal was kept;
//   - quota: Quota.Admit of one id whose quota of one an hour is spent;
//   - lock-nocache, quota-nocache: the same with WithNearCache(0), every
//     refusal a round trip;
//   - lock-rueidis, quota-rueidis: lock and quota on rueidisstore;
//   - store-lock, store-quota: the near cache's own answers, Store.Acquire
//     and Store.AllowN of the keys above, without the Lock and the Quota.
//
// Each op alone (<op>/c16, <op>/c64: ns/op, latency percentiles, and
// cmds/1000, the Redis commands its 1,000 refusals cost, from INFO
// commandstats) and all paired (see benchload.Paired) for <op>/raw, the
// throughput relative to the bare SETNX.
func BenchmarkNearCache(b *testing.B) {
	ctx := context.Background()
	holder, srv, c := newStore(b)
	cached, plain := openNear(b, srv.Addr, ""), openNear(b, srv.Addr, "", redisstore.WithNearCache(0))
	opts := throttle.Options{Timeout: time.Second}
	rate := throttle.Rate{Limit: 1, Window: time.Hour}
	var ops []benchload.Op
	ops = append(ops, rawSetNX(b, c))
	hold, err := throttle.NewLock(holder, throttle.LockConfig{Name: "near-lock", TTL: time.Hour, Options: opts})
	require.NoError(b, err)
	_, err = hold.Admit(ctx, "flood")
	require.NoError(b, err)
	refused := func(name string, err error) error {
		if ce := (*throttle.ContendedError)(nil); !errors.As(err, &ce) {
			return fmt.Errorf("%s: want a refusal, got %v", name, err)
		}
		return nil
	}
	rs := rueidisOn(b, srv.Addr)
	for _, st := range []struct {
		suffix string
		s      *redisstore.Store
	}{{"", cached}, {"-nocache", plain}, {"-rueidis", rs}} {
		l, err := throttle.NewLock(st.s, throttle.LockConfig{Name: "near-lock", TTL: time.Hour, Options: opts})
		require.NoError(b, err)
		q, err := throttle.NewQuota(st.s, throttle.QuotaConfig{Name: "near-quota", Options: opts})
		require.NoError(b, err)
		ops = append(ops,
			benchload.Op{Name: "lock" + st.suffix, Call: func() error {
				_, err := l.Admit(ctx, "flood")
				return refused("lock", err)
			}},
			benchload.Op{Name: "quota" + st.suffix, Call: func() error {
				_, err := q.Admit(ctx, "flood", rate, 1)
				return refused("quota", err)
			}})
		_, _ = q.Admit(ctx, "flood", rate, 1) // spends the quota
	}
	lockKey := storekit.Key("throttle", "near-lock", "flood")
	quotaKey, hourly := storekit.Key("bench", "near-store", "quota"), store.Rate{Limit: 1, Window: time.Hour, Burst: 1}
	_, err = cached.AllowN(ctx, quotaKey, hourly, 1) // spends it
	require.NoError(b, err)
	ops = append(ops,
		benchload.Op{Name: "store-lock", Call: func() error {
			g, err := cached.Acquire(ctx, store.Request{Key: lockKey, Token: "token", TTL: time.Hour})
			if err != nil || g.Acquired {
				return fmt.Errorf("store-lock: %+v, %v", g, err)
			}
			return nil
		}},
		benchload.Op{Name: "store-quota", Call: func() error {
			d, err := cached.AllowN(ctx, quotaKey, hourly, 1)
			if err != nil || d.Allowed {
				return fmt.Errorf("store-quota: %+v, %v", d, err)
			}
			return nil
		}})
	// Until the near caches answer all (their tracking connections are up).
	require.Eventually(b, func() bool {
		before := cached.NearCacheStats().Hits + rs.NearCacheStats().Hits
		for _, op := range slices.Concat(ops[1:3], ops[5:]) {
			require.NoError(b, op.Call())
		}
		return cached.NearCacheStats().Hits+rs.NearCacheStats().Hits == before+6
	}, 10*time.Second, time.Millisecond, "the near cache never answered")
	benchNear(b, func(b testing.TB) int { return redistest.DataCalls(b, c) }, ops)
}

// benchNear runs each of ops alone (<op>/c16, <op>/c64: ns/op, latency
// percentiles, and cmds/1000, the Redis commands its 1,000 calls cost as
// counted by calls, from INFO commandstats) and all of them paired (see
// benchload.Paired), ops[0] the baseline, at 16 and 64 callers.
func benchNear(b *testing.B, calls func(testing.TB) int, ops []benchload.Op) {
	for _, conc := range []int{16, 64} {
		for _, op := range ops {
			b.Run(fmt.Sprintf("%s/c%d", op.Name, conc), func(b *testing.B) {
				before := calls(b)
				benchload.Bench(b, conc, op.Call)
				b.ReportMetric(float64(calls(b)-before)*1000/float64(b.N), "cmds/1000")
			})
		}
		b.Run(fmt.Sprintf("paired/c%d", conc), func(b *testing.B) { benchload.Paired(b, conc, ops) })
	}
}

// rawSetNX is the baseline op "raw": c.SetNX of a key held by another
// client, one plain command that Redis refuses.
func rawSetNX(b *testing.B, c redis.Cmdable) benchload.Op {
	ctx, key := context.Background(), storekit.Key("bench", "raw", "held")
	require.NoError(b, c.Set(ctx, key, "holder", time.Hour).Err())
	return benchload.Op{Name: "raw", Call: func() error {
		if ok, err := c.SetNX(ctx, key, "token", time.Hour).Result(); err != nil || ok {
			return fmt.Errorf("raw: SETNX of a held key = %v, %v", ok, err)
		}
		return nil
	}}
}

// rueidisOn returns a rueidisstore on a client of its own of the server,
// or the Cluster, at addr, closed at the benchmark's end.
func rueidisOn(b *testing.B, addr string) *redisstore.Store {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	require.NoError(b, err)
	b.Cleanup(rc.Close)
	rs := rueidisstore.New(rc)
	b.Cleanup(func() { _ = rs.Close() })
	return rs
}
