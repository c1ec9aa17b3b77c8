package grpcadapter

import (
	"context"
	"errors"
	"hash/maphash"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/flow"
)

// answers is each reason's code, gRPC's mapping of the HTTP status package
// guard answers with, and its message, which never names a key or an
// internal error.
var answers = map[flow.Reason]struct {
	code codes.Code
	msg  string
}{
	flow.ReasonContended:        {codes.ResourceExhausted, "too many calls, or the same call moments ago: retry after the delay in RetryInfo"}, // 429
	flow.ReasonBadKey:           {codes.InvalidArgument, "the call cannot be identified"},                                                      // 400
	flow.ReasonBadCost:          {codes.InvalidArgument, "the call's cost is out of range"},                                                    // 400, 413
	flow.ReasonKeyReused:        {codes.InvalidArgument, "the idempotency key was used for another request: use a new key for a new request"},  // 422
	flow.ReasonStoreUnavailable: {codes.Unavailable, "the call cannot be checked for duplicates or limits right now: retry shortly"},           // 503
	flow.ReasonOverloaded:       {codes.Unavailable, "the server has more calls than it can answer in time: retry after the delay in RetryInfo"},
	flow.ReasonCanceled:         {codes.Canceled, "the call ended before it was decided"},
	flow.ReasonInFlight:         {codes.Aborted, "a call with the same idempotency key is in progress: retry shortly to get its response"}, // 409
	flow.ReasonNotKept: {codes.FailedPrecondition, "a call with the same idempotency key succeeded, but its response was not kept: " +
		"it is not run again until the key expires"}, // 409
	flow.ReasonBadRate:  {codes.Internal, "the server's rate limit is misconfigured"}, // 500
	flow.ReasonReplayed: {codes.Aborted, "the call's response cannot be replayed"},
}

const inProgress = "the same call is already in progress, or as many as may run at once: retry after one finishes"

// Status is the gRPC status of a refusal of a job's call (doc.go lists
// them), with a google.rpc.RetryInfo detail when a retry helps, and a
// google.rpc.QuotaFailure naming the violated policies for
// RESOURCE_EXHAUSTED: what an interceptor returns. It is built once for
// each code, message, delay and set of policies, and shared: a status
// never changes.
func Status(ref *flow.Refusal) *status.Status { return refusal(ref).st }

// answer returns the code and message of ref's status.
func answer(ref *flow.Refusal) (codes.Code, string) {
	a, known := answers[ref.Reason]
	switch {
	case !known: // a reason newer than this table
		a.code, a.msg = codes.Unknown, "the call was not processed"
	case ref.Reason == flow.ReasonContended && ref.Limits.First().Window == 0: // Exclusive, N in flight: HTTP 409
		a.code, a.msg = codes.Aborted, inProgress
	case ref.Reason == flow.ReasonCanceled && errors.Is(ref.Err, context.DeadlineExceeded):
		a.code = codes.DeadlineExceeded
	case ref.Reason == flow.ReasonBadKey:
		if ke := (*keyfuncs.Error)(nil); errors.As(ref.Err, &ke) { // Source and Reason hold no value of the call
			a.msg += ": " + ke.Source + ": " + ke.Reason
		}
	}
	return a.code, a.msg
}

// statusKey is all a refusal's status is built from.
type statusKey struct {
	code  codes.Code
	msg   string
	retry time.Duration // RetryInfo's delay, 0 for none
	names [4]string     // QuotaFailure's policies, for RESOURCE_EXHAUSTED,
	n     int           // the first n of names
}

func (k *statusKey) hash() uint64 {
	h := mix(maphash.String(seed, k.msg) ^ uint64(k.retry) ^ uint64(k.code)<<59)
	for _, name := range k.names[:k.n] {
		h = mix(h ^ maphash.String(seed, name))
	}
	return h
}

// refused is a refusal's status, and the error an interceptor returns.
type refused struct {
	st  *status.Status
	err error
}

// statuses are the refusals' statuses: a refusal costs a lookup, not the
// marshalling of its details into Any (about half of a refusal's time in
// the interceptor, and 18 of its 26 allocations).
var statuses cache[statusKey, refused]

// refusal returns the status of ref, from statuses unless more than four
// policies were violated.
func refusal(ref *flow.Refusal) refused {
	var k statusKey
	k.code, k.msg = answer(ref)
	if ref.RetryAfter > 0 && k.code != codes.FailedPrecondition {
		k.retry = ref.RetryAfter
	}
	if k.code == codes.ResourceExhausted {
		names := ref.Violated()
		if len(names) > len(k.names) {
			return newRefused(&k, names)
		}
		k.n = copy(k.names[:], names)
	}
	return statuses.get(k.hash(), k, func(k statusKey) refused { return newRefused(&k, k.names[:k.n]) })
}

// newRefused builds the status of k, violating the policies names.
func newRefused(k *statusKey, names []string) refused {
	st := status.New(k.code, k.msg)
	var details []protoadapt.MessageV1
	if k.retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(k.retry)})
	}
	if k.code == codes.ResourceExhausted {
		qf := &errdetails.QuotaFailure{}
		for _, name := range names {
			qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{Subject: name, QuotaId: name, Description: k.msg})
		}
		details = append(details, qf)
	}
	if len(details) > 0 {
		if withDetails, err := st.WithDetails(details...); err == nil {
			st = withDetails
		}
	}
	return refused{st: st, err: st.Err()}
}

// mix spreads the bits of x over all of its bits (splitmix64's finalizer),
// so that a cache slot depends on every part of a key.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
