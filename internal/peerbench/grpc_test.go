package peerbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/grpcadapter"
	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// The gRPC comparison: one unary method, test.Svc/Call on
// google.protobuf.Struct (no generated code), keyed by the x-user-id
// metadata (every limiter keeps one state per user: none shares one
// bucket among all), behind throttle's grpcadapter.Unary on a memstore
// Quota or behind go-grpc-middleware's ratelimit interceptor on
// x/time/rate token buckets, or on the same memstore Quota as the
// interceptor's (its Admit as a bare limiter: what the decision costs
// without the adapter).
const (
	callMethod = "/test.Svc/Call"
	userMD     = "x-user-id"
)

// A mix is what every call of a run gets: admitted (a rate no user
// reaches) or refused with RESOURCE_EXHAUSTED (one call an hour, spent by
// the untimed pass over every user before the timer starts).
type mix struct {
	name   string
	limit  int
	window time.Duration
	want   codes.Code
}

var mixes = []mix{
	{"admitted", limit, window, codes.OK},
	{"refused", 1, time.Hour, codes.ResourceExhausted},
}

// every is a token bucket's refill interval for m: limit tokens a window,
// with a burst of limit, the same allowance as a Quota of m.
func (m mix) every() rate.Limit { return rate.Every(m.window / time.Duration(m.limit)) }

// errLimited is the bucket limiters' refusal: go-grpc-middleware wraps it
// in RESOURCE_EXHAUSTED.
var errLimited = errors.New("rate limit exceeded")

// userBuckets is the bare limiter go-grpc-middleware leaves to its users:
// a token bucket per x-user-id in a map behind one mutex (echo's memory
// store is built the same way). A call without the metadata is refused.
type userBuckets struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	every   rate.Limit
	burst   int
}

func (u *userBuckets) Limit(ctx context.Context) error {
	v := metadata.ValueFromIncomingContext(ctx, userMD)
	if len(v) == 0 || v[0] == "" {
		return errLimited
	}
	u.mu.Lock()
	b, ok := u.buckets[v[0]]
	if !ok {
		b = rate.NewLimiter(u.every, u.burst)
		u.buckets[v[0]] = b
	}
	u.mu.Unlock()
	if !b.Allow() {
		return errLimited
	}
	return nil
}

// quotaLimiter is throttle's Quota as go-grpc-middleware's bare limiter:
// Admit on the x-user-id, no metadata sent and no details in a refusal,
// so that the difference from throttle-quota is what grpcadapter adds.
type quotaLimiter struct {
	q    *throttle.Quota
	rate throttle.Rate
}

func (l quotaLimiter) Limit(ctx context.Context) error {
	v := metadata.ValueFromIncomingContext(ctx, userMD)
	if len(v) == 0 || v[0] == "" {
		return errLimited
	}
	if _, err := l.q.Admit(ctx, v[0], l.rate, 1); err != nil {
		return errLimited
	}
	return nil
}

// newQuota is a Quota on a new memory store.
func newQuota(tb testing.TB) *throttle.Quota {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "peer", Options: opts})
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// A grpcCase builds its interceptor per run (so each run starts on an
// empty store); a nil interceptor is the bare server.
type grpcCase struct {
	name  string
	build func(tb testing.TB, m mix) grpc.UnaryServerInterceptor
}

var grpcCases = []grpcCase{
	{name: "bare", build: func(testing.TB, mix) grpc.UnaryServerInterceptor { return nil }},
	{
		name: "throttle-quota",
		build: func(tb testing.TB, m mix) grpc.UnaryServerInterceptor {
			rate := throttle.Rate{Limit: m.limit, Window: m.window}
			return grpcadapter.Unary(flow.Quota(newQuota(tb), rate), grpcadapter.Metadata(userMD))
		},
	},
	{
		name: "grpcmw-ratelimit-user-buckets",
		build: func(_ testing.TB, m mix) grpc.UnaryServerInterceptor {
			return ratelimit.UnaryServerInterceptor(&userBuckets{buckets: map[string]*rate.Limiter{}, every: m.every(), burst: m.limit})
		},
	},
	{
		name: "grpcmw-ratelimit-throttle-quota",
		build: func(tb testing.TB, m mix) grpc.UnaryServerInterceptor {
			return ratelimit.UnaryServerInterceptor(quotaLimiter{q: newQuota(tb), rate: throttle.Rate{Limit: m.limit, Window: m.window}})
		},
	},
}

// callResp is every admitted call's answer, built once.
var callResp = &structpb.Struct{}

func callHandler(ctx context.Context, _ any) (any, error) { return callResp, nil }

// A caller makes call i as user ids[i%len(ids)] and returns its error.
// It is safe for concurrent use.
type caller func(i int) error

// headerStream is the server transport stream of a direct call: it takes
// the header metadata and sends nothing, so that SetHeader costs what the
// interceptor builds, not a transport's write.
type headerStream struct{ grpc.ServerTransportStream }

func (headerStream) Method() string               { return callMethod }
func (headerStream) SetHeader(metadata.MD) error  { return nil }
func (headerStream) SendHeader(metadata.MD) error { return nil }

// direct calls icpt as a server would, with no network: each user's
// incoming context is built here, before any timer starts.
func direct(_ testing.TB, icpt grpc.UnaryServerInterceptor, ids []string) caller {
	ctxs := make([]context.Context, len(ids))
	for i, id := range ids {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(userMD, id))
		ctxs[i] = grpc.NewContextWithServerTransportStream(ctx, headerStream{})
	}
	req := &structpb.Struct{}
	info := &grpc.UnaryServerInfo{FullMethod: callMethod}
	if icpt == nil {
		icpt = func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}
	}
	return func(i int) error {
		_, err := icpt(ctxs[i%len(ids)], req, info, callHandler)
		return err
	}
}

// loopback calls a real server behind icpt over loopback TCP with a real
// client (one connection); each user's outgoing context is built here.
func loopback(tb testing.TB, icpt grpc.UnaryServerInterceptor, ids []string) caller {
	conn := serveGRPC(tb, icpt)
	ctxs := make([]context.Context, len(ids))
	for i, id := range ids {
		ctxs[i] = metadata.AppendToOutgoingContext(context.Background(), userMD, id)
	}
	req := &structpb.Struct{}
	return func(i int) error {
		return conn.Invoke(ctxs[i%len(ids)], callMethod, req, new(structpb.Struct))
	}
}

// serveGRPC starts a real gRPC server on 127.0.0.1:0 serving test.Svc
// behind icpt (none when nil), and returns a client connection to it;
// both end with tb.
func serveGRPC(tb testing.TB, icpt grpc.UnaryServerInterceptor) *grpc.ClientConn {
	tb.Helper()
	var sopts []grpc.ServerOption
	if icpt != nil {
		sopts = append(sopts, grpc.UnaryInterceptor(icpt))
	}
	srv := grpc.NewServer(sopts...)
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Svc",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(_ any, ctx context.Context, dec func(any) error,
			icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(structpb.Struct)
			if err := dec(in); err != nil {
				return nil, err
			}
			if icpt == nil {
				return callHandler(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: callMethod}, callHandler)
		}}},
	}, struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		<-done
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return conn
}

// warm makes one untimed call per user, so that each limiter starts the
// timed part in its steady state (every user known; in the refused mix,
// every user's one call spent), and returns call checked against want: an
// error for any other code.
func warm(call caller, want codes.Code, ids []string) caller {
	for i := range ids {
		_ = call(i)
	}
	return func(i int) error {
		if err := call(i); status.Code(err) != want {
			return fmt.Errorf("call %d (user %s): %v, want %v", i, ids[i%len(ids)], err, want)
		}
		return nil
	}
}

// A driver is direct or loopback, and the key cardinalities it runs with.
type driver struct {
	name  string
	new   func(testing.TB, grpc.UnaryServerInterceptor, []string) caller
	users []int
}

// drivers: loopback runs with 1,024 users only, since its untimed pass
// over 65,536 would take seconds a run, and the store's share of a call
// is the direct row's.
var drivers = []driver{{"direct", direct, []int{1 << 10, 1 << 16}}, {"loopback", loopback, []int{1 << 10}}}

// eachRun runs f as a sub-benchmark for every driver, key cardinality and
// mix, named driver/users=N/mix.
func eachRun(b *testing.B, f func(b *testing.B, d driver, m mix, ids []string)) {
	for _, d := range drivers {
		for _, n := range d.users {
			ids := users(n)
			for _, m := range mixes {
				b.Run(d.name+"/users="+strconv.Itoa(n)+"/"+m.name, func(b *testing.B) { f(b, d, m, ids) })
			}
		}
	}
}

// runs says whether case c runs in mix m: the bare server refuses nothing.
func (c grpcCase) runs(m mix) bool { return c.name != "bare" || m.want == codes.OK }

// want is the code c's calls get in m: OK for the bare server.
func (c grpcCase) want(m mix) codes.Code {
	if c.name == "bare" {
		return codes.OK
	}
	return m.want
}

// BenchmarkGRPCPeers compares throttle's unary interceptor with
// go-grpc-middleware's ratelimit interceptor on per-user token buckets,
// every call of a run admitted or every call refused, one call at a time
// from one goroutine, users taken in turn. "direct" calls the interceptor
// with no network; "loopback" makes each call through a real server and
// client over TCP. The bare server has no interceptor.
func BenchmarkGRPCPeers(b *testing.B) {
	eachRun(b, func(b *testing.B, d driver, m mix, ids []string) {
		for _, c := range grpcCases {
			if !c.runs(m) {
				continue
			}
			b.Run(c.name, func(b *testing.B) {
				call := warm(d.new(b, c.build(b, m), ids), c.want(m), ids)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := call(i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// BenchmarkGRPCPeersPaired makes the calls of BenchmarkGRPCPeers
// interleaved in rounds (benchload.Paired), so that the load of a shared
// machine hits every case alike; loopback also at 16 concurrent callers,
// on one client connection per server. Each call is timed, which adds
// the same clock reads to every case: a direct case's cost is its -ns
// less bare-ns (the bare server runs in the refused mix too, answering
// OK, for that). The first op is the bucket limiter, so that
// throttle-quota/grpcmw-ratelimit-user-buckets is throttle's throughput
// relative to it (0.5: half as fast), and -med the median over rounds.
// The untimed pass over the users is left out of the time the testing
// package sizes b.N by, so that 65,536 users get as many calls as 1,024.
func BenchmarkGRPCPeersPaired(b *testing.B) {
	order := []int{2, 1, 3, 0} // grpcCases: the bucket limiter first, then throttle, its Quota alone, bare
	eachRun(b, func(b *testing.B, d driver, m mix, ids []string) {
		concs := []int{1}
		if d.name == "loopback" {
			concs = append(concs, 16)
		}
		for _, conc := range concs {
			b.Run("c"+strconv.Itoa(conc), func(b *testing.B) {
				var ops []benchload.Op
				for _, i := range order {
					c := grpcCases[i]
					call := warm(d.new(b, c.build(b, m), ids), c.want(m), ids)
					var next atomic.Int64
					ops = append(ops, benchload.Op{Name: c.name, Call: func() error { return call(int(next.Add(1))) }})
				}
				b.ResetTimer()
				benchload.Paired(b, conc, ops)
			})
		}
	})
}

// TestGRPCPeers calls each case over loopback once per user of a small
// set, twice: in each mix the second round must get the mix's code (the
// first spends the refused mix's one call). throttle's answers must carry
// the RateLimit header metadata, which is part of what its row costs;
// with -v it logs the header metadata each case sends.
func TestGRPCPeers(t *testing.T) {
	ids := users(8)
	for _, m := range mixes {
		for _, c := range grpcCases {
			if c.name == "bare" && m.want != codes.OK {
				continue
			}
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				conn := serveGRPC(t, c.build(t, m))
				for round := range 2 {
					for _, id := range ids {
						var md metadata.MD
						ctx := metadata.AppendToOutgoingContext(context.Background(), userMD, id)
						err := conn.Invoke(ctx, callMethod, &structpb.Struct{}, new(structpb.Struct), grpc.Header(&md))
						if round == 0 {
							continue
						}
						if status.Code(err) != m.want {
							t.Fatalf("user %s: %v, want %v", id, err, m.want)
						}
						if c.name == "throttle-quota" && (len(md["ratelimit"]) == 0 || len(md["ratelimit-policy"]) == 0) {
							t.Fatalf("user %s: header metadata %v, want ratelimit and ratelimit-policy", id, md)
						}
						if id == ids[len(ids)-1] {
							t.Logf("ratelimit-policy %q, ratelimit %q; %v", md["ratelimit-policy"], md["ratelimit"], err)
						}
					}
				}
			})
		}
	}
}
