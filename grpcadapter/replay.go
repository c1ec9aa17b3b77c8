package grpcadapter

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/go-throttle/throttle/throttle/flow"
)

// idempotencyKey is the metadata that marks a retried call as the same
// operation: a call carrying it is fingerprinted.
const idempotencyKey = "idempotency-key"

// fingerprint is the digest of req, deterministically marshalled; "" for
// a request that is not a protocol buffer, which matches any.
func fingerprint(req any) string {
	m, ok := req.(proto.Message)
	if !ok {
		return ""
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// recorder keeps the header metadata a Replay key's first call sets, for
// its duplicates.
type recorder struct {
	grpc.ServerTransportStream
	mu sync.Mutex
	md metadata.MD
}

// newRecorder returns ctx with a recorder of its stream's header metadata.
func newRecorder(ctx context.Context) (context.Context, *recorder) {
	st := grpc.ServerTransportStreamFromContext(ctx)
	if st == nil {
		return ctx, nil
	}
	r := &recorder{ServerTransportStream: st, md: metadata.MD{}}
	return grpc.NewContextWithServerTransportStream(ctx, r), r
}

func (r *recorder) SetHeader(md metadata.MD) error {
	r.keep(md)
	return r.ServerTransportStream.SetHeader(md)
}

func (r *recorder) SendHeader(md metadata.MD) error {
	r.keep(md)
	return r.ServerTransportStream.SendHeader(md)
}

func (r *recorder) keep(md metadata.MD) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, vs := range md {
		r.md[k] = append(r.md[k], vs...)
	}
}

// answer is what a Replay keeps of a successful call: its response as a
// marshalled anypb.Any, whose type a duplicate finds in
// protoregistry.GlobalTypes, and its header metadata; nil (not kept) for
// one without a recorder or whose type cannot be found again.
func (r *recorder) answer(resp any) *flow.Answer {
	m, ok := resp.(proto.Message)
	if r == nil || !ok {
		return nil
	}
	if _, err := protoregistry.GlobalTypes.FindMessageByName(m.ProtoReflect().Descriptor().FullName()); err != nil {
		return nil
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil
	}
	b, err := proto.Marshal(a)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &flow.Answer{Status: 200, Header: r.md, Body: b}
}

// replay answers a duplicate with the first call's response and header
// metadata, the RateLimit fields of now and idempotent-replayed: true.
func replay(ctx context.Context, ref *flow.Refusal) (any, error) {
	var a anypb.Any
	if err := proto.Unmarshal(ref.Replayed.Body, &a); err != nil {
		return nil, status.Error(codes.Internal, "the recorded response cannot be read")
	}
	resp, err := a.UnmarshalNew()
	if err != nil {
		return nil, status.Error(codes.Internal, "the recorded response cannot be read")
	}
	md := metadata.MD(ref.Replayed.Header)
	for k, vs := range limitsMD(&ref.Limits) {
		md[k] = vs
	}
	md["idempotent-replayed"] = []string{"true"}
	_ = grpc.SetHeader(ctx, md)
	return resp, nil
}
