package main

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/throttle"
)

// The service, described in Go rather than in a .proto file compiled by
// protoc: every method takes and returns a google.protobuf.Struct.
const (
	serviceName = "throttle.demo.v1.Demo"
	fileName    = "throttle/demo/v1/demo.proto"
)

var methods = []string{"Submit", "Search", "RunJob", "Order"}

// fullMethod is the full name of one of the service's methods.
func fullMethod(name string) string { return "/" + serviceName + "/" + name }

// registerFile registers the service's file descriptor, so that server
// reflection can describe it to a client (grpcurl, Postman).
func registerFile() error {
	if _, err := protoregistry.GlobalFiles.FindFileByPath(fileName); err == nil {
		return nil
	}
	svc := &descriptorpb.ServiceDescriptorProto{Name: proto.String("Demo")}
	for _, m := range methods {
		svc.Method = append(svc.Method, &descriptorpb.MethodDescriptorProto{Name: proto.String(m),
			InputType: proto.String(".google.protobuf.Struct"), OutputType: proto.String(".google.protobuf.Struct")})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:       proto.String(fileName),
		Package:    proto.String("throttle.demo.v1"),
		Dependency: []string{"google/protobuf/struct.proto"},
		Service:    []*descriptorpb.ServiceDescriptorProto{svc},
		Syntax:     proto.String("proto3"),
	}, protoregistry.GlobalFiles)
	if err != nil {
		return err
	}
	return protoregistry.GlobalFiles.RegisterFile(fd)
}

type handler func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error)

// registerDemo registers the service on srv, with its descriptor.
func registerDemo(srv *grpc.Server, s demo.Settings) error {
	if err := registerFile(); err != nil {
		return err
	}
	hs := map[string]handler{"Submit": submit, "Search": search, "RunJob": runJob(s.Work), "Order": order}
	desc := &grpc.ServiceDesc{ServiceName: serviceName, HandlerType: (*any)(nil), Metadata: fileName}
	for _, name := range methods {
		desc.Methods = append(desc.Methods, method(name, hs[name]))
	}
	srv.RegisterService(desc, struct{}{})
	return nil
}

// method is the grpc.MethodDesc of h, which decodes a Struct and runs h
// behind the server's interceptor, as generated code does.
func method(name string, h handler) grpc.MethodDesc {
	info := &grpc.UnaryServerInfo{FullMethod: fullMethod(name)}
	next := func(ctx context.Context, req any) (any, error) { return h(ctx, req.(*structpb.Struct)) }
	return grpc.MethodDesc{MethodName: name, Handler: func(_ any, ctx context.Context, dec func(any) error,
		icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(structpb.Struct)
		if err := dec(in); err != nil {
			return nil, err
		}
		if icpt == nil {
			return next(ctx, in)
		}
		return icpt(ctx, in, info, next)
	}}
}

// newStruct is the Struct of m, whose values structpb.NewValue takes.
func newStruct(m map[string]any) (*structpb.Struct, error) {
	out, err := structpb.NewStruct(m)
	if err != nil {
		return nil, status.Error(codes.Internal, "the answer cannot be built")
	}
	return out, nil
}

func submit(context.Context, *structpb.Struct) (*structpb.Struct, error) {
	return newStruct(map[string]any{"status": "accepted", "server": "grpc"})
}

// search answers the field q as GET /search does.
func search(_ context.Context, in *structpb.Struct) (*structpb.Struct, error) {
	found := demo.Search(in.GetFields()["q"].GetStringValue())
	results := make([]any, 0, len(found.Results))
	for _, r := range found.Results {
		results = append(results, map[string]any{"title": r.Title, "url": r.URL})
	}
	return newStruct(map[string]any{"query": found.Query, "results": results})
}

// runJob works for work, then answers {"job":id,"status":"done"}; it stops
// early, with UNAVAILABLE, when the call's context ends: the client went
// away, the server is shutting down past its grace, or the job lost its
// lease (cause throttle.ErrLost: another caller may now hold the id).
func runJob(work time.Duration) handler {
	return func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
		timer := time.NewTimer(work)
		defer timer.Stop()
		select {
		case <-timer.C:
			return newStruct(map[string]any{"job": in.GetFields()["id"].GetStringValue(), "status": "done", "server": "grpc"})
		case <-ctx.Done():
		}
		if errors.Is(context.Cause(ctx), throttle.ErrLost) {
			return nil, status.Error(codes.Unavailable, "the job lost its lock before it finished and was stopped: retry it")
		}
		return nil, status.Error(codes.Unavailable, "the job was stopped before it finished")
	}
}

// order places an order of the fields item and quantity (default 1),
// taking demo.OrderWork, and answers it with a new id.
func order(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
	select {
	case <-time.After(demo.OrderWork):
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	qty := in.GetFields()["quantity"].GetNumberValue()
	if qty == 0 {
		qty = 1
	}
	return newStruct(map[string]any{"id": rand.Text()[:16], "item": in.GetFields()["item"].GetStringValue(),
		"quantity": qty, "server": "grpc", "created": time.Now().UTC().Format(time.RFC3339Nano)})
}
