// Package keyfuncs builds the identity a request is throttled under: who
// (a user ID, a client IP) and what (a route, a method, the body) it is.
//
// Every Func works on *http.Request, so the same funcs serve net/http, gin
// (c.Request) and echo (c.Request()), and the three build the same keys.
// Funcs compose:
//
//	// the user ID when the gateway set one, the client IP otherwise
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//
//	// one submission per user and route, whatever the path values
//	key := keyfuncs.Join(keyfuncs.ContextValue(userKey{}), keyfuncs.Method(), keyfuncs.Pattern())
//
// A Func that cannot build an identity returns a *Error, which the
// middleware answers with 400 (413 for an over-long body) rather than
// throttling the request under some shared key. Errors name only the
// source, never a value the request carried, so they are safe to show.
//
// # Client addresses behind proxies
//
// Behind a reverse proxy, load balancer or CDN the direct peer (RemoteIP)
// is the proxy, and all users would share its key. ForwardedIP then reads
// X-Forwarded-For (or RFC 7239 Forwarded, with FromForwarded), only from
// the proxies you list, and from right to left: each proxy appends the
// address it received the connection from, so the right end was written
// by your proxies and the left end by the client, who can write anything.
// Taking the leftmost value would let a client pick a fresh key for every
// request, or lock out somebody else by naming their address.
//
// Trust exactly your proxies: nginx on the same host (127.0.0.1 and ::1,
// with "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for"), the
// subnets an AWS load balancer runs in, or Cloudflare's published ranges
// (https://www.cloudflare.com/ips/) plus your own proxies behind it. A
// trusted range that holds clients lets them choose their address. IPv6
// users usually hold a whole /64: add GroupIPv6(64) to key them by network.
package keyfuncs
