package flow_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// tinyrpc is a made-up RPC transport, no HTTP in sight: a request names a
// method and carries metadata and a payload; a handler returns a reply or
// an error with a code.
type (
	rpcRequest struct {
		Method  string
		Meta    map[string]string
		Payload string
	}
	rpcReply struct {
		Meta    map[string]string
		Payload string
	}
	rpcError struct {
		Code       string
		RetryAfter time.Duration
		Meta       map[string]string
	}
	rpcHandler func(ctx context.Context, req *rpcRequest) (*rpcReply, error)
)

func (e *rpcError) Error() string { return e.Code }

// The adapter starts here.

// throttleRPC guards h with j, keyed by the caller's "user" metadata, and
// a Replay by the "idempotency-key" metadata too.
func throttleRPC(j *flow.Job, h rpcHandler) rpcHandler {
	return func(ctx context.Context, req *rpcRequest) (*rpcReply, error) {
		c := flow.Call{ID: req.Meta["user"], Route: req.Method, Request: req}
		if c.ID == "" {
			c.Err = &rpcError{Code: "invalid-argument: no user"}
		}
		if k := req.Meta["idempotency-key"]; k != "" {
			sum := sha256.Sum256([]byte(req.Payload))
			c.ID, c.Fingerprint = strconv.Quote(c.ID)+strconv.Quote(k), hex.EncodeToString(sum[:]) // self-delimiting
		}
		var reply *rpcReply
		var err error
		var ref flow.Refusal
		ok := j.Serve(ctx, c, &ref, func(p flow.Permit) flow.Outcome {
			if reply, err = h(p.Context(), req); err != nil {
				return flow.Outcome{Failed: true}
			}
			reply.Meta = limitsMeta(reply.Meta, p.Limits())
			return flow.Outcome{Answer: &flow.Answer{Status: 200, Body: []byte(reply.Payload)}}
		})
		switch {
		case ok:
			return reply, err
		case ref.Reason == flow.ReasonReplayed:
			meta := limitsMeta(map[string]string{"idempotent-replayed": "true"}, &ref.Limits)
			return &rpcReply{Meta: meta, Payload: string(ref.Replayed.Body)}, nil
		}
		return nil, &rpcError{Code: codes[ref.Reason], RetryAfter: ref.RetryAfter, Meta: limitsMeta(nil, &ref.Limits)}
	}
}

// codes maps the reasons to the transport's codes, as gRPC's would.
var codes = map[flow.Reason]string{
	flow.ReasonContended: "resource-exhausted", flow.ReasonBadKey: "invalid-argument", flow.ReasonBadCost: "invalid-argument",
	flow.ReasonKeyReused: "invalid-argument", flow.ReasonInFlight: "aborted", flow.ReasonNotKept: "aborted",
	flow.ReasonStoreUnavailable: "unavailable", flow.ReasonCanceled: "canceled", flow.ReasonBadRate: "internal",
}

// limitsMeta adds the RateLimit fields to meta, as every answer carries them.
func limitsMeta(meta map[string]string, lim *flow.Limits) map[string]string {
	if meta == nil {
		meta = map[string]string{}
	}
	if policy, limit := lim.Fields(); policy != nil {
		meta["ratelimit-policy"] = policy[0]
		if limit != nil {
			meta["ratelimit"] = limit[0]
		}
	}
	return meta
}

// The adapter ends here.

// An adapter for a transport that is not HTTP builds a flow.Call from its
// request, serves the rest of its chain with Job.Serve and answers a
// Refusal in its own terms. Here a Dedupe lock, a Quota of two calls a
// minute and a Replay guard three methods of the made-up transport.
func Example() {
	st := memstore.New()
	lock, _ := throttle.NewLock(st, throttle.LockConfig{Name: "submit"})
	quota, _ := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	replay, _ := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	orders := 0
	services := map[string]rpcHandler{
		"Submit": throttleRPC(flow.Lock(lock), func(context.Context, *rpcRequest) (*rpcReply, error) {
			return &rpcReply{Payload: "submitted"}, nil
		}),
		"Search": throttleRPC(flow.Quota(quota, throttle.Rate{Limit: 2, Window: time.Minute}),
			func(context.Context, *rpcRequest) (*rpcReply, error) { return &rpcReply{Payload: "found"}, nil }),
		"Order": throttleRPC(flow.Replay(replay), func(_ context.Context, req *rpcRequest) (*rpcReply, error) {
			orders++
			return &rpcReply{Payload: fmt.Sprintf("order %d: %s", orders, req.Payload)}, nil
		}),
	}
	call := func(method, user, key, payload string) {
		meta := map[string]string{"user": user, "idempotency-key": key}
		reply, err := services[method](context.Background(), &rpcRequest{Method: method, Meta: meta, Payload: payload})
		if e, ok := err.(*rpcError); ok {
			fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %s, retry after %v %s", method, e.Code, e.RetryAfter, e.Meta["ratelimit"])))
			return
		}
		replayed := map[string]string{"true": "(replayed)"}[reply.Meta["idempotent-replayed"]]
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %q %s %s", method, reply.Payload, reply.Meta["ratelimit"], replayed)))
	}
	call("Submit", "42", "", "")
	call("Submit", "42", "", "")
	call("Submit", "", "", "")
	for range 3 {
		call("Search", "42", "", "")
	}
	call("Order", "42", "k1", "2 apples")
	call("Order", "42", "k1", "2 apples")
	call("Order", "42", "k1", "3 pears")
	// Output:
	// Submit: "submitted" "submit";r=0;t=5
	// Submit: resource-exhausted, retry after 5s "submit";r=0;t=5
	// Submit: invalid-argument, retry after 0s
	// Search: "found" "search";r=1;t=30
	// Search: "found" "search";r=0;t=30
	// Search: resource-exhausted, retry after 30s "search";r=0;t=30
	// Order: "order 1: 2 apples" "orders";r=0;t=60
	// Order: "order 1: 2 apples" "orders";r=0;t=60 (replayed)
	// Order: invalid-argument, retry after 0s
}
