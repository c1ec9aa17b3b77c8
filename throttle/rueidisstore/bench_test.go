package rueidisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkAdmission measures one admission against a real redis-server
// started for the run, side by side on the same server:
//
//   - goredis-setnx: raw go-redis SetNX, one command per call (the baseline
//     of the README's ratios);
//   - rueidis-set:   raw rueidis SET NX PX, auto-pipelined;
//   - store:         Store.Acquire (SET NX PX GET);
//   - limiter:       Lock.Acquire on the store (key, token, lease, the
//     Options.Timeout bound);
//   - limiter-release: Lock.Acquire then Lease.Release (two commands).
//
// Key cardinality: every call takes a new key (keys expire after 10 s), so
// every admission succeeds. Concurrency: c1, c16 and c64 run exactly that
// many goroutines sharing b.N calls; ns/op is wall time per call across
// them (the inverse of throughput), p50-ns and p99-ns single-call latency.
// internal/cmd/loadbench prints the same comparison as a table.
func BenchmarkAdmission(b *testing.B) {
	s, srv := newStore(b)
	gc := srv.Client(b)
	rc := newClient(b, srv)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench", TTL: 10 * time.Second})
	require.NoError(b, err)
	ctx := context.Background()
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	impls := []struct {
		name string
		op   func() error
	}{
		{"goredis-setnx", func() error {
			return gc.SetNX(ctx, storekit.Key("bench", "raw", next()), "token", 10*time.Second).Err()
		}},
		{"rueidis-set", func() error {
			k := storekit.Key("bench", "rueidis", next())
			return rc.Do(ctx, rc.B().Set().Key(k).Value("token").Nx().PxMilliseconds(10000).Build()).Error()
		}},
		{"store", func() error {
			_, err := s.Acquire(ctx, store.Request{Key: storekit.Key("bench", "store", next()), Token: "token", TTL: 10 * time.Second})
			return err
		}},
		{"limiter", func() error { _, err := l.Acquire(ctx, next()); return err }},
		{"limiter-release", func() error {
			lease, err := l.Acquire(ctx, next())
			if err != nil {
				return err
			}
			return lease.Release(ctx)
		}},
	}
	for _, conc := range []int{1, 16, 64} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/c%d", impl.name, conc), func(b *testing.B) {
				benchload.Bench(b, conc, impl.op)
			})
		}
	}
}
