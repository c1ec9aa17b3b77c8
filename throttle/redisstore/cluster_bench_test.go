package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkClusterAdmission compares Store.Acquire of distinct keys (every
// admission succeeds, on the default path: SET NX alone) on a real
// three-master Redis Cluster through a ClusterClient with the same on one
// standalone redis-server through a Client, at 16 and 64 goroutines. Both
// clients use go-redis's defaults (a pool of 10 connections per GOMAXPROCS,
// per node for the cluster client). The keys spread over every master, so
// the cluster has three servers' worth of CPU, but on a machine with few
// cores they compete with each other and the benchmark for it. ns/op is
// wall time per operation across all goroutines, p50-ns and p99-ns the
// latency percentiles of single operations (see benchload.Bench).
func BenchmarkClusterAdmission(b *testing.B) {
	single := redistest.Start(b)
	clients := []struct {
		name   string
		client redis.UniversalClient
	}{
		{"standalone", single.Client(b)},
		{"cluster", redistest.StartCluster(b, 3).Client(b)},
	}
	ctx := context.Background()
	var seq atomic.Int64
	for _, conc := range []int{16, 64} {
		for _, c := range clients {
			s := redisstore.New(c.client)
			b.Cleanup(func() { _ = s.Close() })
			b.Run(fmt.Sprintf("%s/c%d", c.name, conc), func(b *testing.B) {
				benchload.Bench(b, conc, func() error {
					k := storekit.Key("bench", "cluster", strconv.FormatInt(seq.Add(1), 10))
					g, err := s.Acquire(ctx, store.Request{Key: k, Token: "token", TTL: 10 * time.Second})
					if err == nil && !g.Acquired {
						err = fmt.Errorf("distinct key %s not acquired", k)
					}
					return err
				})
			})
		}
	}
}
