package rueidisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
)

// BenchmarkQuotaPaired measures a Quota decision (Quota.Allow, one GCRA
// script by EVALSHA) on the store against a real redis-server started for
// the run, interleaved with raw go-redis SetNX (the floor of one command
// per call), by benchload.Paired:
//
//   - raw:     go-redis client.SetNX, one command per call;
//   - limiter: Quota.Allow on a store whose rueidis client has its
//     defaults;
//   - flush:   the same on a client with MaxFlushDelay 20µs.
//
// Key cardinality: "distinct" makes every operation a new user under 100
// per minute, so every decision is allowed and written (a new key: SET NX,
// no script; see rueidisstore's AllowN); "returning" takes 1024 users in
// turn, each charged before the run, under a quota that never runs out
// during it (every decision allowed and written, by the script: the key
// exists). raw is SETNX on a new key in both. Concurrency: c1, c16 and c64
// goroutines sharing b.N operations per implementation. It reports each
// one's wall time per operation and throughput relative to raw
// (limiter/raw, flush/raw; 1.0 is as fast as a bare SETNX).
func BenchmarkQuotaPaired(b *testing.B) {
	srv := redistest.Start(b)
	gc := srv.Client(b)
	names := map[string]string{"distinct": "bench-quota", "returning": "bench-quota-r"}
	rates := map[string]throttle.Rate{
		"distinct":  {Limit: 100, Window: time.Minute},
		"returning": {Limit: 3600, Window: time.Hour, Burst: 100_000},
	}
	limitersOn := func(opt rueidis.ClientOption) map[string]*throttle.Quota {
		opt.InitAddress, opt.DisableCache = []string{srv.Addr}, true
		c, err := rueidis.NewClient(opt)
		require.NoError(b, err)
		st := rueidisstore.New(c)
		b.Cleanup(func() { _ = st.Close(); c.Close() })
		qs := map[string]*throttle.Quota{}
		for card, name := range names {
			qs[card], err = throttle.NewQuota(st, throttle.QuotaConfig{Name: name})
			require.NoError(b, err)
		}
		return qs
	}
	plain, flush := limitersOn(rueidis.ClientOption{}), limitersOn(rueidis.ClientOption{MaxFlushDelay: 20 * time.Microsecond})
	ctx := context.Background()
	// The returning users, each charged once on both stores before the run.
	const returning = 1024
	for i := range returning {
		for _, qs := range []map[string]*throttle.Quota{plain, flush} {
			_, err := qs["returning"].Allow(ctx, "r"+strconv.Itoa(i), rates["returning"], 1)
			require.NoError(b, err)
		}
	}
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	user := func(card string) string {
		if card == "returning" {
			return "r" + strconv.FormatInt(seq.Add(1)%returning, 10)
		}
		return next()
	}
	allow := func(qs map[string]*throttle.Quota, card string) func() error {
		return func() error {
			d, err := qs[card].Allow(ctx, user(card), rates[card], 1)
			if err == nil && !d.Allowed {
				err = fmt.Errorf("a %s user was refused: %+v", card, d)
			}
			return err
		}
	}
	for _, card := range []string{"distinct", "returning"} {
		ops := []benchload.Op{
			{Name: "raw", Call: func() error { return gc.SetNX(ctx, storekit.Key("bench", "raw", next()), "token", time.Minute).Err() }},
			{Name: "limiter", Call: allow(plain, card)},
			{Name: "flush", Call: allow(flush, card)},
		}
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", card, conc), func(b *testing.B) {
				b.ReportAllocs()
				benchload.Paired(b, conc, ops)
			})
		}
	}
}
