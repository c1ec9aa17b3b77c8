package main

import (
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/grpcadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/store"
)

// user is who calls: the metadata x-user-id, else the peer's IP. The HTTP
// examples key on keyfuncs.FirstOf(X-User-ID, the demo_user cookie, the
// client IP), and FirstOf puts each key's position in the identity, so a
// key that always fails holds the cookie's place: user 42 and the client
// 192.0.2.1 have one identity over HTTP and gRPC, and one stored key.
var user = grpcadapter.FirstOf(grpcadapter.Metadata("x-user-id"), noCookie, grpcadapter.Peer())

var errNoCookie = &keyfuncs.Error{Source: "cookie", Reason: "none over gRPC"}

func noCookie(grpcadapter.Info) (string, error) { return "", errNoCookie }

var (
	errNoJobID   = &keyfuncs.Error{Source: `request field "id"`, Reason: "missing"}
	errLongJobID = &keyfuncs.Error{Source: `request field "id"`, Reason: "longer than " + strconv.Itoa(demo.MaxJobID) + " bytes"}
)

// jobID keys RunJob on the request's string field id, as POST
// /jobs/{id}/run keys on its path: the id itself, 1 to demo.MaxJobID bytes.
func jobID(i grpcadapter.Info) (string, error) {
	req, _ := i.Request.(*structpb.Struct)
	switch id := req.GetFields()["id"].GetStringValue(); {
	case id == "":
		return "", errNoJobID
	case len(id) > demo.MaxJobID:
		return "", errLongJobID
	default:
		return id, nil
	}
}

// newGuards returns the interceptor of each method: the HTTP examples'
// limiters, configured as theirs, so that the stored keys are the same.
func newGuards(st store.Store, s demo.Settings) (map[string]grpc.UnaryServerInterceptor, error) {
	submitLock, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit", TTL: s.Window, Options: s.Options()})
	if err != nil {
		return nil, err
	}
	search, err := demo.NewSearchQuota(st, s)
	if err != nil {
		return nil, err
	}
	jobs, err := demo.NewJobsLock(st, s)
	if err != nil {
		return nil, err
	}
	orders, err := demo.NewOrdersReplay(st, s)
	if err != nil {
		return nil, err
	}
	return map[string]grpc.UnaryServerInterceptor{
		fullMethod("Submit"): grpcadapter.Unary(flow.Lock(submitLock), user),
		fullMethod("Search"): grpcadapter.Unary(flow.Quota(search, demo.SearchRate), user),
		fullMethod("RunJob"): grpcadapter.Unary(flow.Lock(jobs), jobID),
		fullMethod("Order"):  grpcadapter.Unary(flow.Replay(orders), grpcadapter.Join(user, grpcadapter.Metadata("idempotency-key"))),
	}, nil
}
