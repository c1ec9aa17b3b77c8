package redisstore_test

import (
	"context"
	"fmt"
	"net"
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

	"github.com/stretchr/testify/require"
)

// BenchmarkReplicaAck measures what WithReplicaAck costs. A master and one
// replica run on loopback (the replica syncs directly, no proxy); 16
// goroutines share b.N acquisitions of distinct keys (every one is
// granted; keys expire after 10 s) through one client, plain (SET NX alone
// without the option, the pipeline SET NX PX, GET, PTTL and WAIT with it)
// and on the acquire script (fenced), without the option ("off") and with
// WithReplicaAck(1, 100ms) ("on"). ns/op is wall time per
// acquisition across the goroutines (the inverse of throughput); p50-ns and
// p99-ns are the latency percentiles of single acquisitions. With the
// option each acquisition's reply waits for the replica's acknowledgement
// (WAIT in the same round trip), so the difference is the master-replica
// round trip plus the replica's work, under load.
//
// The "paired" runs interleave the two: rounds of 400 acquisitions, off
// and on in turn (in alternating order), so that load from other processes
// on a shared machine hits both alike. b.N counts the acquisitions of each.
// They report off-ns and on-ns (wall time per acquisition), on/off (how
// much slower the option makes a run), and each one's p50 and p99 latency.
func BenchmarkReplicaAck(b *testing.B) {
	master := redistest.Start(b, "--repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := redistest.Start(b, "--replicaof", host, port)
	redistest.WaitInSync(b, master, replica)
	c := redis.NewClient(&redis.Options{Addr: master.Addr, ContextTimeoutEnabled: true, PoolSize: 32})
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	var seq atomic.Int64
	acquire := func(s *redisstore.Store, fence bool) func() error {
		return func() error {
			k := storekit.Key("bench", "ack", strconv.FormatInt(seq.Add(1), 10))
			g, err := s.Acquire(ctx, store.Request{Key: k, Token: "token", TTL: 10 * time.Second, Fence: fence})
			if err == nil && !g.Acquired {
				err = fmt.Errorf("distinct key %s not granted: %+v", k, g)
			}
			return err
		}
	}
	stores := func(b *testing.B, opts ...redisstore.Option) *redisstore.Store {
		s := redisstore.New(c, opts...)
		b.Cleanup(func() { _ = s.Close() })
		<-redisstore.ConfigChecked(s)
		return s
	}
	on := redisstore.WithReplicaAck(1, 100*time.Millisecond)
	for _, path := range []string{"plain", "fenced"} {
		for _, ack := range []bool{false, true} {
			name := path + "/off"
			var opts []redisstore.Option
			if ack {
				name = path + "/on"
				opts = append(opts, on)
			}
			b.Run(name, func(b *testing.B) {
				benchload.Bench(b, 16, acquire(stores(b, opts...), path == "fenced"))
			})
		}
	}
	for _, path := range []string{"plain", "fenced"} {
		b.Run("paired/"+path, func(b *testing.B) {
			fence := path == "fenced"
			ops := [2]func() error{acquire(stores(b), fence), acquire(stores(b, on), fence)}
			var spent [2]time.Duration
			var lat [2][]time.Duration
			const round = 400
			for done := 0; done < b.N; done += round {
				n := min(round, b.N-done)
				for j := range 2 {
					i := (j + done/round) % 2
					t0 := time.Now()
					l, err := benchload.Run(16, n, ops[i])
					require.NoError(b, err)
					spent[i] += time.Since(t0)
					lat[i] = append(lat[i], l...)
				}
			}
			per := func(i int) float64 { return float64(spent[i]) / float64(b.N) }
			for i, name := range []string{"off", "on"} {
				b.ReportMetric(per(i), name+"-ns")
				benchload.Report(b, name+"-", lat[i])
			}
			b.ReportMetric(per(1)/per(0), "on/off")
			b.ReportMetric(0, "ns/op") // the per-variant figures above say it
		})
	}
}
