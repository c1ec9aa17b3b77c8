package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkQuotaPaired measures a Quota decision against a real
// redis-server started for the run, interleaved with the floor of one
// round trip by benchload.Paired, on one client:
//
//   - raw:   client.SetNX(key, token, ttl), one plain command;
//   - store: Store.AllowN, the GCRA script by EVALSHA (one round trip);
//   - limiter: Quota.Allow, which adds the quota's key, its timeout and
//     its counters;
//   - script: the floor of a quota decided by a script, gcraFloor, the
//     least GCRA one script can run (keys of its own, charged alike).
//
// Key cardinality: "distinct" gives every operation a new user under 100
// per minute (every decision allowed and written; a new key is charged
// with SET NX, no script: see Store.AllowN); "returning" takes 1024 users
// in turn, each charged before the run, under a quota that never runs out
// during it (every decision allowed and written, by the script: the key
// exists); "hot" sends every operation for one user whose quota of one an
// hour is spent (every decision refused, nothing written). raw is SETNX on
// a new key in the first two, on one held key in "hot".
// Concurrency: c1, c16, c64 goroutines sharing b.N operations per
// implementation. It reports each one's wall time per operation and the
// throughput relative to raw (store/raw, limiter/raw; 1.0 is as fast as a
// bare SETNX).
func BenchmarkQuotaPaired(b *testing.B) {
	_, _, c := newStore(b)
	ctx := context.Background()
	s := redisstore.New(c)
	b.Cleanup(func() { _ = s.Close() })
	// The hot user's quota is one an hour, spent before the run.
	rate := map[string]store.Rate{
		"distinct":  {Limit: 100, Window: time.Minute, Burst: 100},
		"returning": {Limit: 3600, Window: time.Hour, Burst: 100_000},
		"hot":       {Limit: 1, Window: time.Hour, Burst: 1},
	}
	// The Quotas' rates: the same Limit and Window, Burst = Limit.
	limiterRate := map[string]throttle.Rate{}
	limiters := map[string]*throttle.Quota{}
	for card, r := range rate {
		q, err := throttle.NewQuota(s, throttle.QuotaConfig{Name: "bench-" + card})
		require.NoError(b, err)
		limiters[card] = q
		limiterRate[card] = throttle.Rate{Limit: r.Limit, Window: r.Window}
	}
	require.NoError(b, gcraFloor.Load(ctx, c).Err())
	// floor charges user's own key under r with gcraFloor.
	floor := func(user string, r store.Rate) *redis.Cmd {
		t := storekit.Interval(r).Milliseconds()
		return gcraFloor.Run(ctx, c, []string{"bench:floor:" + user}, t, t*int64(r.Burst))
	}
	_, _ = limiters["hot"].Allow(ctx, "hot", limiterRate["hot"], 1)
	_, err := s.AllowN(ctx, "bench:hot", rate["hot"], 1)
	require.NoError(b, err)
	require.NoError(b, floor("hot", rate["hot"]).Err())
	const returning = 1024
	for i := range returning {
		u := "r" + strconv.Itoa(i)
		_, err1 := limiters["returning"].Allow(ctx, u, limiterRate["returning"], 1)
		_, err2 := s.AllowN(ctx, "bench:"+u, rate["returning"], 1)
		err3 := floor(u, rate["returning"]).Err()
		require.NoError(b, errors.Join(err1, err2, err3))
	}
	var seq atomic.Int64
	id := func(card string) string {
		switch card {
		case "hot":
			return "hot"
		case "returning":
			return "r" + strconv.FormatInt(seq.Add(1)%returning, 10)
		}
		return strconv.FormatInt(seq.Add(1), 10)
	}
	type impl struct {
		name string
		op   func(card string) (bool, error)
	}
	impls := []impl{
		{"raw", func(card string) (bool, error) {
			if card == "hot" {
				ok, err := c.SetNX(ctx, "bench:raw-hot", "token", 10*time.Second).Result()
				return !ok, err // held after the first: "refused"
			}
			return c.SetNX(ctx, "bench:raw:"+id("distinct"), "token", 10*time.Second).Result()
		}},
		{"script", func(card string) (bool, error) {
			n, err := floor(id(card), rate[card]).Int64()
			return n >= 0, err
		}},
		{"store", func(card string) (bool, error) {
			d, err := s.AllowN(ctx, "bench:"+id(card), rate[card], 1)
			return d.Allowed, err
		}},
		{"limiter", func(card string) (bool, error) {
			d, err := limiters[card].Allow(ctx, id(card), limiterRate[card], 1)
			return d.Allowed, err
		}},
	}
	for _, card := range []string{"distinct", "returning", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", card, conc), func(b *testing.B) {
				b.ReportAllocs()
				ops := make([]benchload.Op, len(impls))
				for i, im := range impls {
					ops[i] = benchload.Op{Name: im.name, Call: func() error {
						ok, err := im.op(card)
						if want := card != "hot"; err == nil && ok != want && im.name != "raw" {
							err = fmt.Errorf("%s: allowed = %v, want %v", im.name, ok, want)
						}
						return err
					}}
				}
				benchload.Paired(b, conc, ops)
			})
		}
	}
}

// gcraFloor is the least a GCRA script on one key can do, with the
// theoretical arrival time kept as the key's expiry as gcra_ms.lua keeps
// it: read the expiry, refuse or move it (create the key when it has
// none). No check that the key is a quota, no cost, no refunds, no test
// clock, and the reply is the new expiry or -1. BenchmarkQuotaPaired runs
// it as "script", so that the store's script has its floor in the same
// run: what a script costs the server over one plain command.
//
// KEYS[1] the key; ARGV[1] the emission interval in ms; ARGV[2] the
// tolerance (interval * burst) in ms.
var gcraFloor = redis.NewScript(`
local r = redis.call("PTTL", KEYS[1])
if r < 0 then r = 0 end
local new = r + tonumber(ARGV[1])
if new > tonumber(ARGV[2]) then return -1 end
if r == 0 then redis.call("SET", KEYS[1], "", "PX", new) else redis.call("PEXPIRE", KEYS[1], new) end
return new`)
