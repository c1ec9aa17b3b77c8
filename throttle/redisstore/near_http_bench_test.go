package redisstore_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// BenchmarkNearCacheHTTP is BenchmarkNearCache through the nethttp
// middleware, on one redis-server (standalone/...) and on a Cluster of
// three masters (cluster/..., through go-redis ClusterClients and a rueidis
// cluster client): a flood of POST /submit from one user, each refused
// 429, beside raw go-redis SETNX of a held key in the same run:
//
//   - lock: a Cooldown Lock whose key the user's first request took for an
//     hour;
//   - quota: a Quota of one an hour, spent by that first request;
//   - lock-rueidis, quota-rueidis: the same guards on rueidisstore;
//   - lock-nocache, quota-nocache: on redisstore WithNearCache(0), every
//     refusal a round trip.
//
// Figures are named as BenchmarkNearCache's (see benchNear); a Cluster's
// commands are summed over its masters.
func BenchmarkNearCacheHTTP(b *testing.B) {
	b.Run("standalone", func(b *testing.B) {
		_, srv, c := newStore(b)
		benchNearHTTP(b, c, srv.Addr, func(b testing.TB) int { return redistest.DataCalls(b, c) },
			func(opts ...redisstore.Option) *redisstore.Store { return openNear(b, srv.Addr, "", opts...) })
	})
	b.Run("cluster", func(b *testing.B) {
		cl := redistest.StartCluster(b, 3)
		calls := func(b testing.TB) (n int) {
			for _, m := range cl.Masters {
				n += redistest.DataCalls(b, cl.NodeClient(b, m))
			}
			return n
		}
		benchNearHTTP(b, cl.Client(b), cl.Addrs[0], calls, func(opts ...redisstore.Option) *redisstore.Store {
			s := redisstore.New(cl.Client(b), opts...)
			b.Cleanup(func() { _ = s.Close() })
			<-redisstore.ConfigChecked(s)
			return s
		})
	})
}

// benchNearHTTP is BenchmarkNearCacheHTTP on the deployment at addr, which
// raw and the stores open makes use.
func benchNearHTTP(b *testing.B, raw redis.Cmdable, addr string, calls func(testing.TB) int,
	open func(...redisstore.Option) *redisstore.Store) {
	opts := throttle.Options{Timeout: time.Second}
	ops := []benchload.Op{rawSetNX(b, raw)}
	var cached []*redisstore.Store
	for _, st := range []struct {
		suffix string
		s      *redisstore.Store
	}{{"", open()}, {"-rueidis", rueidisOn(b, addr)}, {"-nocache", open(redisstore.WithNearCache(0))}} {
		l, err := throttle.NewLock(st.s, throttle.LockConfig{Name: "near-http-lock", Mode: throttle.Cooldown,
			TTL: time.Hour, Options: opts})
		require.NoError(b, err)
		q, err := throttle.NewQuota(st.s, throttle.QuotaConfig{Name: "near-http-quota", Options: opts})
		require.NoError(b, err)
		ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
		lock := nethttp.Middleware(guard.Lock(l), adaptertest.UserKey())(ok)
		quota := nethttp.Middleware(guard.Quota(q, throttle.Rate{Limit: 1, Window: time.Hour}), adaptertest.UserKey())(ok)
		// The first request (on the first store) is served and takes the
		// key, or spends the quota, for an hour.
		adaptertest.Serve(lock, adaptertest.Submit("flood"))
		adaptertest.Serve(quota, adaptertest.Submit("flood"))
		ops = append(ops, refusedHTTP("lock"+st.suffix, lock), refusedHTTP("quota"+st.suffix, quota))
		if st.suffix != "-nocache" {
			cached = append(cached, st.s)
		}
	}
	hits := func() (n uint64) {
		for _, s := range cached {
			n += s.NearCacheStats().Hits
		}
		return n
	}
	// Until the near caches answer all (their tracking connections are up).
	require.Eventually(b, func() bool {
		before := hits()
		for _, op := range ops[1:5] {
			require.NoError(b, op.Call())
		}
		return hits() == before+4
	}, 10*time.Second, time.Millisecond, "the near cache never answered")
	benchNear(b, calls, ops)
}

// refusedHTTP is the op name: a POST /submit of user "flood" served by h,
// which must refuse it (429). Each call takes a request and a writer that
// no other call uses at the time, made before the timer starts or reused:
// what is measured is h.
func refusedHTTP(name string, h http.Handler) benchload.Op {
	pool := sync.Pool{New: func() any {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		r.Header.Set(adaptertest.UserHeader, "flood")
		return &httpCall{r: r, w: &statusWriter{h: http.Header{}}}
	}}
	return benchload.Op{Name: name, Call: func() error {
		c := pool.Get().(*httpCall)
		defer pool.Put(c)
		clear(c.w.h)
		h.ServeHTTP(c.w, c.r)
		if c.w.status != http.StatusTooManyRequests {
			return fmt.Errorf("%s: status %d, want 429", name, c.w.status)
		}
		return nil
	}}
}

// httpCall is one reusable request and its writer.
type httpCall struct {
	r *http.Request
	w *statusWriter
}

// statusWriter is a ResponseWriter that keeps only the status.
type statusWriter struct {
	h      http.Header
	status int
}

func (w *statusWriter) Header() http.Header         { return w.h }
func (w *statusWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *statusWriter) WriteHeader(s int)           { w.status = s }
