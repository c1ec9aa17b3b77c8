package grpcadapter

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/go-throttle/throttle/keyfuncs"
)

// Info is what a Key reads of a call: its context (incoming metadata,
// peer), its full method name, and for a unary call its request message.
type Info struct {
	Ctx context.Context
	// Method is the full method name, such as "/shop.v1.Orders/Create".
	Method string
	// Request is a unary call's request message; nil for a stream.
	Request any
}

// Key returns the identity a call is throttled under, or an error, a
// *keyfuncs.Error naming what is missing, when the call does not carry
// one: the call then gets INVALID_ARGUMENT, never a key shared by every
// caller. keyfuncs.FirstOf and keyfuncs.Join take Keys too.
type Key func(Info) (string, error)

// Metadata keys on the first non-empty value of the incoming metadata
// name (case-insensitive), such as the x-user-id a gateway sets: trust only
// metadata your infrastructure sets or strips.
func Metadata(name string) Key {
	name = strings.ToLower(name)
	errMissing := &keyfuncs.Error{Source: "metadata " + strconv.Quote(name), Reason: "missing"}
	return func(i Info) (string, error) {
		for _, v := range metadata.ValueFromIncomingContext(i.Ctx, name) {
			if v != "" {
				return v, nil
			}
		}
		return "", errMissing
	}
}

// Peer keys on the IP address of the peer, written as keyfuncs.RemoteIP
// writes a client's (no port or zone, IPv4-mapped as IPv4), so that a
// client has the same identity over HTTP and gRPC. Behind a proxy the peer
// is the proxy: give Peer cfg, as keyfuncs.RemoteIP takes it, and from one
// of cfg's TrustedProxies it keys on the client that the x-forwarded-for
// metadata (or forwarded, with cfg.Forwarded) names, read right to left,
// as an HTTP adapter reads the header field; IPv6Prefix groups IPv6
// clients. Metadata from any other peer is ignored, so a client cannot
// choose its own key. A peer without an IP address (a Unix socket) is an
// error. It panics as keyfuncs.RemoteIP does.
func Peer(cfg ...keyfuncs.IPConfig) Key {
	if len(cfg) == 0 {
		return func(i Info) (string, error) {
			addr := peerAddr(i.Ctx)
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			return keyfuncs.FromIP(host, "peer address")
		}
	}
	key, field := keyfuncs.RemoteIP(cfg...), "X-Forwarded-For"
	if cfg[0].Forwarded {
		field = "Forwarded"
	}
	md := strings.ToLower(field)
	return func(i Info) (string, error) {
		addr := peerAddr(i.Ctx)
		if addr == "" {
			return keyfuncs.FromIP("", "peer address")
		}
		r := http.Request{RemoteAddr: addr, Header: http.Header{field: metadata.ValueFromIncomingContext(i.Ctx, md)}}
		return key(&r)
	}
}

// peerAddr is the address of ctx's peer, "" when there is none.
func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

var errNoMethod = &keyfuncs.Error{Source: "full method name", Reason: "missing"}

// FullMethod keys on the full method name: one limit per method.
func FullMethod() Key {
	return func(i Info) (string, error) {
		if i.Method == "" {
			return "", errNoMethod
		}
		return i.Method, nil
	}
}

// Static keys every call on s: one lock for the whole policy, or a label.
func Static(s string) Key { return func(Info) (string, error) { return s, nil } }

// FirstOf keys on the first of keys that succeeds, as keyfuncs.FirstOf
// does (the position is part of the identity).
func FirstOf(keys ...Key) Key { return keyfuncs.FirstOf(keys...) }

// Join keys on all of keys together, as keyfuncs.Join does: a Replay's
// user and idempotency-key, Join(Metadata("x-user-id"),
// Metadata("idempotency-key")).
func Join(keys ...Key) Key { return keyfuncs.Join(keys...) }
