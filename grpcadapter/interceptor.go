package grpcadapter

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
)

// Option configures an interceptor.
type Option func(*adapter)

// WithFailed tells a failed call from the error its handler returned:
// a failed call frees a Dedupe or Replay key for a retry, and keeps the
// charge of a CountOnlyFailures Quota. Default: any error.
func WithFailed(failed func(err error) bool) Option {
	return func(a *adapter) {
		if failed != nil {
			a.failed = failed
		}
	}
}

type adapter struct {
	job    *flow.Job
	key    Key
	failed func(error) bool
	replay bool // the job is a Replay: its calls are fingerprinted
}

func newAdapter(job *flow.Job, key Key, opts []Option) *adapter {
	if job == nil || key == nil {
		panic("grpcadapter: an interceptor needs a job and a key")
	}
	a := &adapter{job: job, key: key, failed: func(error) bool { return true }, replay: job.Mode() == throttle.ModeReplay}
	for _, o := range opts {
		o(a)
	}
	return a
}

// call is the flow.Call of i: its Request is i, for the job's functions
// (flow.Skip, flow.WithCost, a Quota's rates).
func (a *adapter) call(i Info) flow.Call {
	id, err := a.key(i)
	return flow.Call{ID: id, Err: err, Route: i.Method, Request: i}
}

// Unary returns an interceptor that decides every unary call with job,
// under the identity key builds. A call that goes ahead runs its handler
// with the permit's context and ends its hold when the handler returns:
// as failed when it returns an error (see WithFailed) or panics (the panic
// keeps unwinding). A call turned away gets the status doc.go lists.
// Either way the header metadata carries the RateLimit fields. It panics
// when job or key is nil.
//
// For a Replay job, a call carrying the metadata "idempotency-key" is
// fingerprinted (a digest of its request, deterministically marshalled):
// a duplicate with another request gets INVALID_ARGUMENT; one with the same
// gets the first call's response and header metadata again, with
// "idempotent-replayed: true". Only a response whose type is in
// protoregistry.GlobalTypes is kept.
func Unary(job *flow.Job, key Key, opts ...Option) grpc.UnaryServerInterceptor {
	a := newAdapter(job, key, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c := a.call(Info{Ctx: ctx, Method: info.FullMethod, Request: req})
		if a.replay && len(metadata.ValueFromIncomingContext(ctx, idempotencyKey)) > 0 {
			c.Fingerprint = fingerprint(req)
		}
		var resp any
		var err error
		var ref flow.Refusal
		if a.job.Serve(ctx, c, &ref, func(p flow.Permit) flow.Outcome {
			_ = grpc.SetHeader(ctx, limitsMD(p.Limits()))
			hctx, rec := p.Context(), (*recorder)(nil)
			if p.Records() {
				hctx, rec = newRecorder(hctx)
			}
			if resp, err = handler(hctx, req); err != nil {
				return flow.Outcome{Failed: a.failed(err)}
			}
			return flow.Outcome{Answer: rec.answer(resp)}
		}) {
			return resp, err
		}
		if ref.Reason == flow.ReasonReplayed && ref.Replayed != nil {
			return replay(ctx, &ref)
		}
		_ = grpc.SetHeader(ctx, limitsMD(&ref.Limits))
		return nil, refusal(&ref).err
	}
}

// Stream returns an interceptor that decides every stream with job, under
// the identity key builds (Info.Request is nil): a stream that goes ahead
// holds its key while it lives, and ends its hold when its handler returns,
// as Unary's calls do. A Replay keeps no stream's answer: its duplicates
// get FAILED_PRECONDITION.
func Stream(job *flow.Job, key Key, opts ...Option) grpc.StreamServerInterceptor {
	a := newAdapter(job, key, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		p, ref, ok := a.job.Begin(ctx, a.call(Info{Ctx: ctx, Method: info.FullMethod}))
		if !ok {
			_ = ss.SetHeader(limitsMD(&ref.Limits))
			return refusal(&ref).err
		}
		ended := false
		defer func() {
			if !ended { // a panic or runtime.Goexit: the panic keeps unwinding
				p.End(flow.Outcome{Failed: true, Panicked: true})
			}
		}()
		_ = ss.SetHeader(limitsMD(p.Limits()))
		if pctx := p.Context(); pctx != ctx {
			ss = &stream{ServerStream: ss, ctx: pctx}
		}
		err := handler(srv, ss)
		ended = true
		p.End(flow.Outcome{Failed: err != nil && a.failed(err)})
		return err
	}
}

// stream is a stream run with its permit's context.
type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }
