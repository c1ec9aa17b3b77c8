package grpcadapter_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// The test service, test.Svc, has one unary method, Call, and one
// bidirectional stream, Chat, both on google.protobuf.Struct, so that no
// generated code is needed.
const (
	callMethod = "/test.Svc/Call"
	chatMethod = "/test.Svc/Chat"
)

type (
	callFunc func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error)
	chatFunc func(ss grpc.ServerStream) error
)

// serve starts a real gRPC server on 127.0.0.1:0 with the interceptors
// and handlers given, and returns a client connection to it; both end
// with the test.
func serve(t testing.TB, unary grpc.UnaryServerInterceptor, stream grpc.StreamServerInterceptor, call callFunc, chat chatFunc) *grpc.ClientConn {
	t.Helper()
	var opts []grpc.ServerOption
	if unary != nil {
		opts = append(opts, grpc.UnaryInterceptor(unary))
	}
	if stream != nil {
		opts = append(opts, grpc.StreamInterceptor(stream))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Svc",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(_ any, ctx context.Context, dec func(any) error,
			icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(structpb.Struct)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) { return call(ctx, req.(*structpb.Struct)) }
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: callMethod}, h)
		}}},
		Streams: []grpc.StreamDesc{{StreamName: "Chat", ServerStreams: true, ClientStreams: true,
			Handler: func(_ any, ss grpc.ServerStream) error { return chat(ss) }}},
	}, struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return conn
}

// echo answers a call with its request and "n": the count of its calls.
func echo(n *int) callFunc {
	return func(_ context.Context, in *structpb.Struct) (*structpb.Struct, error) {
		*n++
		out := &structpb.Struct{Fields: map[string]*structpb.Value{"n": structpb.NewNumberValue(float64(*n))}}
		for k, v := range in.GetFields() {
			out.Fields[k] = v
		}
		return out, nil
	}
}

// echoChat answers each message of a stream with itself.
func echoChat(ss grpc.ServerStream) error {
	for {
		m := new(structpb.Struct)
		if err := ss.RecvMsg(m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
}

// answer is what a client got from one call.
type answer struct {
	out    *structpb.Struct
	header metadata.MD
	st     *status.Status
}

// call calls test.Svc/Call with the metadata pairs md and the fields of in.
func call(t *testing.T, conn *grpc.ClientConn, in map[string]any, md ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, md...)
	req, err := structpb.NewStruct(in)
	require.NoError(t, err)
	var a answer
	out := new(structpb.Struct)
	err = conn.Invoke(ctx, callMethod, req, out, grpc.Header(&a.header))
	a.st = status.Convert(err)
	if err == nil {
		a.out = out
	}
	return a
}

// code fails the test unless a's code is want, and returns a.
func (a answer) code(t *testing.T, want codes.Code) answer {
	t.Helper()
	require.Equal(t, want, a.st.Code(), "status: %v", a.st)
	return a
}

// fields fails the test unless a carries the RateLimit header metadata
// policy and limit ("" for none).
func (a answer) fields(t *testing.T, policy, limit string) answer {
	t.Helper()
	require.Equal(t, policy, first(a.header.Get("ratelimit-policy")), "ratelimit-policy")
	require.Equal(t, limit, first(a.header.Get("ratelimit")), "ratelimit")
	return a
}

// details returns the RetryInfo and QuotaFailure details of a's status,
// nil for those it does not carry; any other detail fails the test.
func (a answer) details(t *testing.T) (*errdetails.RetryInfo, *errdetails.QuotaFailure) {
	t.Helper()
	var ri *errdetails.RetryInfo
	var qf *errdetails.QuotaFailure
	for _, d := range a.st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			ri = d
		case *errdetails.QuotaFailure:
			qf = d
		default:
			t.Fatalf("unexpected detail %T: %v", d, d)
		}
	}
	return ri, qf
}

// retry returns a's RetryInfo delay, failing the test without one.
func (a answer) retry(t *testing.T) time.Duration {
	t.Helper()
	ri, _ := a.details(t)
	require.NotNil(t, ri, "no RetryInfo in %v", a.st)
	return ri.GetRetryDelay().AsDuration()
}

// violated returns the subjects of a's QuotaFailure, failing the test
// without one.
func (a answer) violated(t *testing.T) []string {
	t.Helper()
	_, qf := a.details(t)
	require.NotNil(t, qf, "no QuotaFailure in %v", a.st)
	var names []string
	for _, v := range qf.GetViolations() {
		names = append(names, v.GetSubject())
	}
	return names
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

var errEOF = io.EOF

// withUser is ctx carrying the x-user-id metadata id.
func withUser(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-user-id", id)
}

// codeOf is the gRPC code of err.
func codeOf(err error) codes.Code { return status.Code(err) }
