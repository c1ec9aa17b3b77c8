package examples_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/internal/redistest"
)

// dialGRPC returns a client connection to the gRPC example a, closed with
// the test.
func dialGRPC(t *testing.T, a *app) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(a.url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// grpcReply is what a client got from one call of the Demo service.
type grpcReply struct {
	out    *structpb.Struct
	header metadata.MD
	st     *status.Status
}

// demoCall calls throttle.demo.v1.Demo/method with the fields in and the
// metadata pairs md.
func demoCall(t *testing.T, conn *grpc.ClientConn, method string, in map[string]any, md ...string) grpcReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := structpb.NewStruct(in)
	require.NoError(t, err)
	r := grpcReply{out: new(structpb.Struct)}
	err = conn.Invoke(metadata.AppendToOutgoingContext(ctx, md...), "/throttle.demo.v1.Demo/"+method, req, r.out, grpc.Header(&r.header))
	r.st = status.Convert(err)
	return r
}

func (r grpcReply) is(t *testing.T, code codes.Code) grpcReply {
	t.Helper()
	require.Equal(t, code, r.st.Code(), "%v", r.st)
	return r
}

// retryDelay is r's RetryInfo delay; violated, its QuotaFailure's subjects.
func (r grpcReply) retryDelay(t *testing.T) time.Duration {
	t.Helper()
	for _, d := range r.st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("no RetryInfo in %v", r.st)
	return 0
}

func (r grpcReply) violated(t *testing.T) []string {
	t.Helper()
	for _, d := range r.st.Details() {
		if qf, ok := d.(*errdetails.QuotaFailure); ok {
			var names []string
			for _, v := range qf.GetViolations() {
				names = append(names, v.GetSubject())
			}
			return names
		}
	}
	t.Fatalf("no QuotaFailure in %v", r.st)
	return nil
}

func (r grpcReply) meta(name string) string { return strings.Join(r.header.Get(name), ",") }

func TestGRPCExample(t *testing.T) {
	skipUnlessProcesses(t)
	a := startApp(t, "grpc", "-window", "3s", "-work", "1s")
	conn := dialGRPC(t, a)

	// Health: never throttled, no RateLimit metadata.
	var hmd metadata.MD
	for range 3 {
		resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&hmd))
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
		require.Empty(t, hmd.Get("ratelimit-policy"))
	}

	// Submit: Dedupe.
	ok := demoCall(t, conn, "Submit", nil, "x-user-id", "g1").is(t, codes.OK)
	require.Equal(t, `"submit";q=1;w=3`, ok.meta("ratelimit-policy"))
	require.Equal(t, `"submit";r=0;t=3`, ok.meta("ratelimit"))
	require.Equal(t, "accepted", ok.out.GetFields()["status"].GetStringValue())
	dup := demoCall(t, conn, "Submit", nil, "x-user-id", "g1").is(t, codes.ResourceExhausted)
	require.Equal(t, 3*time.Second, dup.retryDelay(t))
	require.Equal(t, []string{"submit"}, dup.violated(t))
	require.Equal(t, `"submit";r=0;t=3`, dup.meta("ratelimit"))
	demoCall(t, conn, "Submit", nil).is(t, codes.OK) // keyed by the peer
	demoCall(t, conn, "Submit", nil).is(t, codes.ResourceExhausted)

	// Search: 10 per minute, then RESOURCE_EXHAUSTED for about 6 s.
	for i := range 10 {
		r := demoCall(t, conn, "Search", map[string]any{"q": "gcra"}, "x-user-id", "g1").is(t, codes.OK)
		require.Equal(t, `"search";q=10;w=60`, r.meta("ratelimit-policy"), "search %d", i+1)
		require.Equal(t, "gcra", r.out.GetFields()["query"].GetStringValue())
	}
	spent := demoCall(t, conn, "Search", nil, "x-user-id", "g1").is(t, codes.ResourceExhausted)
	require.InDelta(t, 6, spent.retryDelay(t).Seconds(), 1)
	require.Equal(t, []string{"search"}, spent.violated(t))

	// RunJob: Exclusive per id; of two callers at once, one works and the
	// other is ABORTED while it does.
	var jobs [2]grpcReply
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); jobs[i] = demoCall(t, conn, "RunJob", map[string]any{"id": "j1"}) }()
	}
	wg.Wait()
	if jobs[0].st.Code() != codes.OK {
		jobs[0], jobs[1] = jobs[1], jobs[0]
	}
	done := jobs[0].is(t, codes.OK)
	jobs[1].is(t, codes.Aborted)
	require.Equal(t, "done", done.out.GetFields()["status"].GetStringValue())
	require.Equal(t, `"jobs";q=1;qu="concurrent-requests"`, done.meta("ratelimit-policy"))
	bad := demoCall(t, conn, "RunJob", nil).is(t, codes.InvalidArgument)
	require.Contains(t, bad.st.Message(), `request field "id": missing`)

	// Order: Replay by user and idempotency-key.
	book := map[string]any{"item": "book", "quantity": 2}
	o1 := demoCall(t, conn, "Order", book, "x-user-id", "g1", "idempotency-key", "k1").is(t, codes.OK)
	require.Empty(t, o1.meta("idempotent-replayed"))
	o2 := demoCall(t, conn, "Order", book, "x-user-id", "g1", "idempotency-key", "k1").is(t, codes.OK)
	require.True(t, proto.Equal(o1.out, o2.out), "%v != %v", o1.out, o2.out)
	require.Equal(t, "true", o2.meta("idempotent-replayed"))
	demoCall(t, conn, "Order", map[string]any{"item": "pen"}, "x-user-id", "g1", "idempotency-key", "k1").is(t, codes.InvalidArgument)
	noKey := demoCall(t, conn, "Order", book, "x-user-id", "g1").is(t, codes.InvalidArgument)
	require.Contains(t, noKey.st.Message(), `metadata "idempotency-key": missing`)

	a.stop(t, syscall.SIGTERM)
}

// TestGRPCReflection lists and describes the service with a server
// reflection client, as grpcurl does.
func TestGRPCReflection(t *testing.T) {
	skipUnlessProcesses(t)
	a := startApp(t, "grpc")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(dialGRPC(t, a)).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		require.NoError(t, stream.Send(req))
		resp, err := stream.Recv()
		require.NoError(t, err)
		require.Nil(t, resp.GetErrorResponse(), "%v", resp.GetErrorResponse())
		return resp
	}
	var services []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}).GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	require.Contains(t, services, "throttle.demo.v1.Demo")
	require.Contains(t, services, "grpc.health.v1.Health")

	files := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: "throttle.demo.v1.Demo"}}).GetFileDescriptorResponse().GetFileDescriptorProto()
	require.NotEmpty(t, files)
	var fd descriptorpb.FileDescriptorProto
	require.NoError(t, proto.Unmarshal(files[0], &fd))
	require.Equal(t, "throttle.demo.v1", fd.GetPackage())
	require.Len(t, fd.GetService(), 1)
	var methods []string
	for _, m := range fd.GetService()[0].GetMethod() {
		methods = append(methods, m.GetName())
		require.Equal(t, ".google.protobuf.Struct", m.GetInputType())
		require.Equal(t, ".google.protobuf.Struct", m.GetOutputType())
	}
	require.Equal(t, []string{"Submit", "Search", "RunJob", "Order"}, methods)
	require.NoError(t, stream.CloseSend())
	a.stop(t, syscall.SIGINT)
}

func TestGRPCBadWindow(t *testing.T) {
	skipUnlessProcesses(t)
	for _, w := range []string{"0s", "-1s"} {
		out, err := exec.Command(binary(t, "grpc"), "-addr", "127.0.0.1:0", "-window", w).CombinedOutput()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "-window %s: %v\n%s", w, err, out)
		require.Equal(t, 2, ee.ExitCode(), "%s", out)
		require.Contains(t, string(out), "-window")
	}
}

// TestCrossTransport runs examples/nethttp and examples/grpc on one real
// redis-server: their keys are the same, so a duplicate is refused across
// HTTP and gRPC, for a user named in metadata or a header and for one
// known by its address; an order is replayed across two gRPC processes;
// and with Redis gone, RunJob (Exclusive, failing closed) is UNAVAILABLE.
func TestCrossTransport(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	web := startApp(t, "nethttp", "-redis", srv.Addr, "-window", "5s")
	rpc := startApp(t, "grpc", "-redis", srv.Addr, "-window", "5s")
	conn, client := dialGRPC(t, rpc), newClient(t)

	// HTTP first, then gRPC.
	require.Equal(t, http.StatusOK, submit(client, web, "x-1").status)
	dup := demoCall(t, conn, "Submit", nil, "x-user-id", "x-1").is(t, codes.ResourceExhausted)
	require.Equal(t, []string{"submit"}, dup.violated(t))
	// gRPC first, then HTTP.
	demoCall(t, conn, "Submit", nil, "x-user-id", "x-2").is(t, codes.OK)
	require.Equal(t, http.StatusTooManyRequests, submit(client, web, "x-2").status)
	// Keyed by the address, 127.0.0.1 for both.
	require.Equal(t, http.StatusOK, submit(client, web, "").status)
	demoCall(t, conn, "Submit", nil).is(t, codes.ResourceExhausted)

	// One quota: 5 searches over HTTP, 5 over gRPC, then both refuse.
	for range 5 {
		resp, err := client.Do(searchRequest(t, web, "x-3"))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		demoCall(t, conn, "Search", nil, "x-user-id", "x-3").is(t, codes.OK)
	}
	demoCall(t, conn, "Search", nil, "x-user-id", "x-3").is(t, codes.ResourceExhausted)
	resp, err := client.Do(searchRequest(t, web, "x-3"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	// One job at a time across both: of an HTTP and a gRPC caller at once,
	// one works and the other is refused (409, ABORTED).
	var wg sync.WaitGroup
	var web1 reply
	var rpc1 grpcReply
	wg.Add(2)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequest(http.MethodPost, web.url+"/jobs/cross/run", nil)
		web1 = do(client, req)
	}()
	go func() { defer wg.Done(); rpc1 = demoCall(t, conn, "RunJob", map[string]any{"id": "cross"}) }()
	wg.Wait()
	require.NoError(t, web1.err)
	switch web1.status {
	case http.StatusOK:
		rpc1.is(t, codes.Aborted)
	case http.StatusConflict:
		rpc1.is(t, codes.OK)
	default:
		t.Fatalf("POST /jobs/cross/run: %d %s", web1.status, web1.body)
	}

	// An order placed through one gRPC process is replayed by another.
	rpc2 := startApp(t, "grpc", "-redis", srv.Addr)
	book := map[string]any{"item": "book"}
	o1 := demoCall(t, conn, "Order", book, "x-user-id", "x-4", "idempotency-key", "k1").is(t, codes.OK)
	o2 := demoCall(t, dialGRPC(t, rpc2), "Order", book, "x-user-id", "x-4", "idempotency-key", "k1").is(t, codes.OK)
	require.True(t, proto.Equal(o1.out, o2.out), "%v != %v", o1.out, o2.out)
	require.Equal(t, "true", o2.meta("idempotent-replayed"))
	rpc2.stop(t, syscall.SIGTERM)

	srv.Kill(t)
	down := demoCall(t, conn, "RunJob", map[string]any{"id": "j9"}).is(t, codes.Unavailable)
	require.Equal(t, time.Second, down.retryDelay(t))
	require.NotContains(t, down.st.Message(), srv.Addr)
	rpc.stop(t, syscall.SIGTERM)
	web.stop(t, syscall.SIGTERM)
}

func searchRequest(t *testing.T, a *app, user string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.url+"/search?q=x", nil)
	require.NoError(t, err)
	req.Header.Set("X-User-ID", user)
	return req
}
