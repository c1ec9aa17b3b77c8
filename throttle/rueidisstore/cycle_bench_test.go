package rueidisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/redisalgo"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkCycleParts splits what an Exclusive Lock's cycle (Lock.Acquire
// then Lease.Release of a new id) costs beside the raw two-round-trip lock
// of BenchmarkLimiterPaired/cycle, layer by layer, interleaved
// (benchload.Paired) on one redis-server at 16 and 64 callers; every op
// takes a new key and frees it, and fails unless both steps succeed:
//
//   - raw:     SET NX PX, then the token-checked release script (GET,
//     compare, DEL of the key alone);
//   - script:  raw's SET, then the store's release script with its keys and
//     args (the key and its record deleted, the release published);
//   - nopub:   script, less the PUBLISH that wakes the key's waiters;
//   - store:   Store.Acquire then Store.Release;
//   - limiter: the Lock's cycle, as BenchmarkLimiterPaired/cycle.
//
// Each op after raw reports <op>/raw-med, its throughput relative to raw
// (see benchload.Paired): script/raw is what the release script costs,
// store/script what the store's code adds, limiter/store the Lock's.
func BenchmarkCycleParts(b *testing.B) {
	s, srv := newStore(b)
	rc := newClient(b, srv)
	lock, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench-x", Mode: throttle.Exclusive,
		TTL: 10 * time.Second, Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	ctx := context.Background()
	src := redisalgo.Scripts()["release"].Src
	const publish = "redis.call(\"PUBLISH\", ARGV[2], \"1\")\nreturn 1"
	require.Contains(b, src, publish)
	raw := rueidis.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	ours, nopub := rueidis.NewLuaScript(src), rueidis.NewLuaScript(strings.Replace(src, publish, "return 1", 1))
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	cycle := func(l *rueidis.Lua, full bool) func() error {
		return func() error {
			k := storekit.Key("bench", "cycle", next())
			if err := rc.Do(ctx, rc.B().Set().Key(k).Value("token").Nx().PxMilliseconds(10000).Build()).Error(); err != nil {
				return err
			}
			keys, args := []string{k}, []string{"token"}
			if full {
				keys, args = []string{k, storekit.RecordKey(k)}, []string{"token", k + ":released"}
			}
			if n, err := l.Exec(ctx, rc, keys, args).AsInt64(); err != nil || n != 1 {
				return fmt.Errorf("release %s = %d, %v", k, n, err)
			}
			return nil
		}
	}
	ops := []benchload.Op{
		{Name: "raw", Call: cycle(raw, false)},
		{Name: "script", Call: cycle(ours, true)},
		{Name: "nopub", Call: cycle(nopub, true)},
		{Name: "store", Call: func() error {
			k := storekit.Key("bench", "store", next())
			g, err := s.Acquire(ctx, store.Request{Key: k, Token: "token", TTL: 10 * time.Second})
			if err != nil || !g.Acquired {
				return fmt.Errorf("store: acquire %s = %+v, %v", k, g, err)
			}
			if out, err := s.Release(ctx, k, "token"); err != nil || out != store.OK {
				return fmt.Errorf("store: release %s = %v, %v", k, out, err)
			}
			return nil
		}},
		{Name: "limiter", Call: func() error {
			lease, err := lock.Acquire(ctx, next())
			if err != nil || lease == nil {
				return errors.Join(errors.New("limiter: a new id was not granted"), err)
			}
			return lease.Release(ctx)
		}},
	}
	for _, conc := range []int{16, 64} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) { benchload.Paired(b, conc, ops) })
	}
}
