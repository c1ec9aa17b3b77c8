package rueidisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkQuotaPaired measures a Quota decision (Limiter.Allow, one GCRA
// script by EVALSHA) on the store against a real redis-server started for
// the run, interleaved with raw go-redis SetNX (the floor of one command
// per call), by benchload.Paired:
//
//   - raw:     go-redis client.SetNX, one command per call;
//   - limiter: Limiter.Allow on a store whose rueidis client has its
//     defaults;
//   - flush:   the same on a client with MaxFlushDelay 20µs.
//
// Key cardinality: every operation is a new user under 100 per minute, so
// every decision is allowed and written. Concurrency: c1, c16 and c64
// goroutines sharing b.N operations per implementation. It reports each
// one's wall time per operation and throughput relative to raw
// (limiter/raw, flush/raw; 1.0 is as fast as a bare SETNX).
func BenchmarkQuotaPaired(b *testing.B) {
	srv := redistest.Start(b)
	gc := srv.Client(b)
	policy := throttle.Policy{Name: "bench-quota", Mode: throttle.Quota, Limit: 100, Window: time.Minute}
	limiterOn := func(opt rueidis.ClientOption) *throttle.Limiter {
		opt.InitAddress, opt.DisableCache = []string{srv.Addr}, true
		c, err := rueidis.NewClient(opt)
		if err != nil {
			b.Fatal(err)
		}
		st := rueidisstore.New(c)
		b.Cleanup(func() { _ = st.Close(); c.Close() })
		l, err := throttle.New(st, policy)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	plain, flush := limiterOn(rueidis.ClientOption{}), limiterOn(rueidis.ClientOption{MaxFlushDelay: 20 * time.Microsecond})
	ctx := context.Background()
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	allow := func(l *throttle.Limiter) func() error {
		return func() error {
			d, err := l.Allow(ctx, next())
			if err == nil && !d.Allowed {
				err = fmt.Errorf("a new user was refused: %+v", d)
			}
			return err
		}
	}
	ops := []benchload.Op{
		{Name: "raw", Call: func() error { return gc.SetNX(ctx, store.Key("bench", "raw", next()), "token", time.Minute).Err() }},
		{Name: "limiter", Call: allow(plain)},
		{Name: "flush", Call: allow(flush)},
	}
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("distinct/c%d", conc), func(b *testing.B) {
			b.ReportAllocs()
			benchload.Paired(b, conc, ops)
		})
	}
}
