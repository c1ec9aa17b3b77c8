package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkAdmission measures one admission decision (Store.Acquire) on
// local redis-servers started for the run, for six stores side by side:
//
//   - single:   redisstore on one node (one round trip);
//   - redlock3: Redlock over three nodes (three round trips in parallel,
//     decided at the second answer);
//   - redlock5: Redlock over five nodes (decided at the third answer);
//   - single-rueidis, redlock3-rueidis, redlock5-rueidis: the same on
//     rueidisstore stores (redlock.NewOnStores), whose rueidis clients
//     pipeline the concurrent calls to each node;
//   - raw, fanout3-raw, fanout5-raw: the floor of the go-redis rows, bare
//     go-redis SETNX on one node and sent to three or five in parallel,
//     answered at the quorum (see rawFanout).
//
// Node 0 is shared, so the single store and both Redlocks talk to the same
// first server; each store has clients of its own (go-redis's default pool
// of 10 connections per GOMAXPROCS, ContextTimeoutEnabled).
//
// Key cardinality: "distinct" gives every operation a new key, so every
// admission succeeds (keys expire after 10 s); "hot" uses one key held on
// every node for the whole run, so every admission is refused.
//
// Concurrency: c1, c16 and c64 run exactly that many goroutines, which share
// b.N operations. ns/op is wall time per operation across all goroutines
// (the inverse of throughput); p50-ns and p99-ns are the latency
// percentiles of single operations. The five servers and the benchmark
// share one machine, so the figures include CPU contention among them: a
// Redlock admission costs the machine three or five commands where the
// single store costs one.
func BenchmarkAdmission(b *testing.B) {
	impls, keyFor := admissionSetup(b)
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("%s/%s/c%d", card, impl.name, conc), func(b *testing.B) {
					lat, err := benchload.Run(conc, b.N, func() error { return impl.check(card, keyFor(card)) })
					require.NoError(b, err)
					benchload.Report(b, "", lat)
				})
			}
		}
	}
}

// BenchmarkAdmissionPaired runs the same six stores interleaved, in
// rounds of 200 operations per store in rotating order, so that load from
// other processes on a shared machine hits all three alike; b.N is the
// number of operations per store. It reports each store's p50 and p99
// latency (single-p50-ns, redlock3-p50-ns, ...) and the ratio of each
// Redlock's p50 to the single node's on the same client library
// (redlock3/single-p50, redlock3-rueidis/single-rueidis-p50). Key cardinality
// and concurrency as in BenchmarkAdmission.
func BenchmarkAdmissionPaired(b *testing.B) {
	impls, keyFor := admissionSetup(b)
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", card, conc), func(b *testing.B) {
				lat := make([][]time.Duration, len(impls))
				const round = 200
				for done := 0; done < b.N; done += round {
					n := min(round, b.N-done)
					for j := range impls {
						i := (j + done/round) % len(impls)
						l, err := benchload.Run(conc, n, func() error { return impls[i].check(card, keyFor(card)) })
						require.NoError(b, err)
						lat[i] = append(lat[i], l...)
					}
				}
				p50 := make([]float64, len(impls))
				for i, impl := range impls {
					p50[i] = benchload.Report(b, impl.name+"-", lat[i])
				}
				// Each Redlock against the single node on the same
				// client library.
				for i, impl := range impls {
					if base := impl.base; base >= 0 {
						b.ReportMetric(p50[i]/p50[base], impl.name+"/"+impls[base].name+"-p50")
					}
				}
			})
		}
	}
}

// admissionImpl is one store the admission benchmarks compare, or one
// floor under them.
type admissionImpl struct {
	name string
	s    store.Store
	base int // index of the single-node store it is compared with; -1 for none
	// raw, when set, is used instead of s: a floor made of bare go-redis
	// commands (see rawFanout).
	raw func(key string) (bool, error)
}

// check acquires key and fails unless the outcome is the one the key
// cardinality implies: every distinct key is acquired, the hot key never.
func (a admissionImpl) check(card, key string) error {
	var acquired bool
	var err error
	if a.raw != nil {
		acquired, err = a.raw(key)
	} else {
		var g store.Grant
		g, err = a.s.Acquire(context.Background(), store.Request{Key: key, Token: storekit.NewToken(), TTL: 10 * time.Second})
		acquired = g.Acquired
	}
	if want := card == "distinct"; err == nil && acquired != want {
		err = fmt.Errorf("%s: acquired = %v, want %v", a.name, acquired, want)
	}
	return err
}

// rawFanout is the floor under a Redlock acquisition on go-redis clients:
// SETNX of key sent to every client at once, one goroutine each, and the
// answer known at the quorum-th grant (or when a quorum can no longer be
// reached). No token check, no validity arithmetic, no release of a missed
// quorum: only the round trips in parallel that any Redlock on go-redis
// makes. Over one client it is one bare SETNX. The calls still running
// after the answer are counted in late.
func rawFanout(cs []redis.UniversalClient, late *sync.WaitGroup) func(key string) (bool, error) {
	ctx := context.Background()
	quorum := len(cs)/2 + 1
	return func(key string) (bool, error) {
		if len(cs) == 1 {
			return cs[0].SetNX(ctx, key, "token", 10*time.Second).Result()
		}
		type answer struct {
			ok  bool
			err error
		}
		answers := make(chan answer, len(cs))
		for _, c := range cs {
			late.Go(func() {
				ok, err := c.SetNX(ctx, key, "token", 10*time.Second).Result()
				answers <- answer{ok, err}
			})
		}
		granted, refused := 0, 0
		for range cs {
			a := <-answers
			if a.err != nil {
				return false, a.err
			}
			if a.ok {
				granted++
			} else {
				refused++
			}
			switch {
			case granted >= quorum:
				return true, nil
			case refused > len(cs)-quorum:
				return false, nil
			}
		}
		return false, nil
	}
}

// admissionSetup starts five redis-servers and returns the three stores on
// them, and the keys to use for a cardinality: a new key per call for
// "distinct", one key held on every node for "hot".
func admissionSetup(b *testing.B) ([]admissionImpl, func(card string) string) {
	ns := startNodes(b, 5, false)
	single := redisstore.New(ns.clients(b)[0])
	b.Cleanup(func() { _ = single.Close() })
	over := func(n int) *redlock.Store {
		s, err := redlock.New(ns.clients(b)[:n])
		require.NoError(b, err)
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	rueidisNodes := make([]store.Store, 5)
	for i, srv := range ns.srvs {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
		require.NoError(b, err)
		st := rueidisstore.New(c)
		b.Cleanup(func() { _ = st.Close(); c.Close() })
		rueidisNodes[i] = st
	}
	overStores := func(n int) *redlock.Store {
		s, err := redlock.NewOnStores(rueidisNodes[:n])
		require.NoError(b, err)
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	impls := []admissionImpl{
		{name: "single", s: single, base: -1}, {name: "redlock3", s: over(3)}, {name: "redlock5", s: over(5)},
		{name: "single-rueidis", s: rueidisNodes[0], base: -1},
		{name: "redlock3-rueidis", s: overStores(3), base: 3}, {name: "redlock5-rueidis", s: overStores(5), base: 3},
	}
	// The floor of the go-redis Redlocks: bare SETNX on one node and fanned
	// out to three and five, on clients of their own.
	// Their calls still running are waited for before the clients close.
	raw := ns.clients(b)
	var late sync.WaitGroup
	b.Cleanup(late.Wait)
	impls = append(impls,
		admissionImpl{name: "raw", base: -1, raw: rawFanout(raw[:1], &late)},
		admissionImpl{name: "fanout3-raw", base: len(impls), raw: rawFanout(raw[:3], &late)},
		admissionImpl{name: "fanout5-raw", base: len(impls), raw: rawFanout(raw[:5], &late)},
	)
	hot := storekit.Key("bench", "hot", "key")
	for _, c := range ns.direct {
		require.NoError(b, c.Set(context.Background(), hot, "holder", time.Hour).Err())
	}
	// Warm the pools so that the first sub-benchmark does not pay for
	// the dials, which on a loaded machine may take longer than a node
	// timeout: a failed warm-up is tried again.
	for _, impl := range impls {
		var err error
		for range 5 {
			if _, err = benchload.Run(64, 640, func() error { return impl.check("hot", hot) }); err == nil {
				break
			}
		}
		require.NoError(b, err)
	}
	var seq atomic.Int64
	keyFor := func(card string) string {
		if card == "hot" {
			return hot
		}
		return storekit.Key("bench", "d", strconv.FormatInt(seq.Add(1), 10))
	}
	return impls, keyFor
}

// BenchmarkAdmissionPaced measures what asking the nodes in parallel costs
// a single admission when the machine is not saturated: the same six
// stores as BenchmarkAdmission, each in turn, under the same offered load
// of 1000 admissions a second spread evenly over c16 or c64 callers (each
// caller sleeps until its next slot, so the load does not depend on how
// fast a store answers). BenchmarkAdmissionPaired, by contrast, keeps
// every caller busy: there the latency is the queue behind a saturated
// CPU, and a Redlock admission, three or five commands for one, waits
// three to five times as long on two cores shared with five
// redis-servers. Here p50 is one admission's own time: one round trip for
// a single node, the quorum-th of three or five parallel ones for Redlock.
//
// Key cardinality: every admission takes a new key. b.N is the number of
// admissions per store; at 1000 a second, -benchtime 4000x takes about 24
// s per sub-benchmark. It reports each store's p50-ns and p99-ns and each
// Redlock's p50 over the single node's on the same client library
// (redlock3/single-p50, redlock3-rueidis/single-rueidis-p50, ...), and
// the same ratio for the floor (fanout3-raw/raw-p50): what three or five
// go-redis round trips in parallel cost over one on this machine, whatever
// the store does around them.
func BenchmarkAdmissionPaced(b *testing.B) {
	impls, keyFor := admissionSetup(b)
	const rate = 1000 // admissions a second, over all callers
	for _, conc := range []int{16, 64} {
		b.Run(fmt.Sprintf("distinct/c%d", conc), func(b *testing.B) {
			p50 := make([]float64, len(impls))
			for i, impl := range impls {
				lat, err := paced(conc, max(b.N/conc, 1), time.Duration(conc)*time.Second/rate, func() error {
					return impl.check("distinct", keyFor("distinct"))
				})
				require.NoError(b, err)
				p50[i] = benchload.Report(b, impl.name+"-", lat)
			}
			for i, impl := range impls {
				if base := impl.base; base >= 0 {
					b.ReportMetric(p50[i]/p50[base], impl.name+"/"+impls[base].name+"-p50")
				}
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// paced runs conc callers that each make n calls of op, one every gap,
// the callers' slots spread evenly over the gap, and returns the latency
// of every call. A call that overruns its slot delays only its own
// caller's next one.
func paced(conc, n int, gap time.Duration, op func() error) ([]time.Duration, error) {
	var (
		mu    sync.Mutex
		all   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for c := range conc {
		wg.Go(func() {
			next := start.Add(gap * time.Duration(c) / time.Duration(conc))
			mine := make([]time.Duration, 0, n)
			var err error
			for range n {
				time.Sleep(time.Until(next))
				next = next.Add(gap)
				t0 := time.Now()
				if err = op(); err != nil {
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return all, first
}
