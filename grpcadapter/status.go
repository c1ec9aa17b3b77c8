package grpcadapter

import (
	"context"
	"errors"

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
// RESOURCE_EXHAUSTED: what an interceptor returns.
func Status(ref *flow.Refusal) *status.Status {
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
	st := status.New(a.code, a.msg)
	var details []protoadapt.MessageV1
	if ref.RetryAfter > 0 && a.code != codes.FailedPrecondition {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(ref.RetryAfter)})
	}
	if a.code == codes.ResourceExhausted {
		qf := &errdetails.QuotaFailure{}
		for _, name := range ref.Violated() {
			qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{Subject: name, QuotaId: name, Description: a.msg})
		}
		details = append(details, qf)
	}
	if len(details) > 0 {
		if withDetails, err := st.WithDetails(details...); err == nil {
			st = withDetails
		}
	}
	return st
}
