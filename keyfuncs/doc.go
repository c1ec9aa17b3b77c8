// Package keyfuncs builds the identity a request is throttled under: who
// (a user ID, a client IP) and what (a route, a method, the body) it is.
//
// Every Func works on *http.Request, so the same funcs serve net/http, gin
// (c.Request) and echo (c.Request()), and the three build the same keys.
// Funcs are small and composable:
//
//	// the user ID when the gateway set one, the client IP otherwise
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//
//	// one submission per user and route, whatever the path values
//	key := keyfuncs.Join(keyfuncs.ContextValue(userKey{}), keyfuncs.Method(), keyfuncs.Pattern())
//
// A Func that cannot build an identity returns a *Error, which the
// middleware answers with 400 (or 413 for an over-long body) instead of
// throttling the request under some shared key. Errors name only the
// source ("header \"X-User-ID\"", "remote address"), never a value the
// request carried, so they are safe to show to clients.
//
// # Client addresses behind proxies
//
// RemoteIP is the direct peer. Behind a reverse proxy, load balancer or CDN
// that peer is the proxy, and all users would share one key; ForwardedIP
// then reads X-Forwarded-For (or RFC 7239 Forwarded, with FromForwarded),
// but only from the proxies you list, and walks it from right to left.
//
// Why right to left: every proxy appends the address it received the
// connection from. The rightmost entries were therefore written by your own
// proxies, the leftmost ones by whoever sent the request, who can write
// anything. A limiter that takes the leftmost value lets any client send
// "X-Forwarded-For: <random>" and get a fresh key on every request, or
// lock out somebody else by naming their address. ForwardedIP skips the
// entries that are your proxies' own addresses and stops at the first one
// that is not: that is the address your outermost proxy saw, the client as
// far as anything you control can tell.
//
// Configuring it:
//
//   - nginx on the same host: trust 127.0.0.1 and ::1, and let nginx append
//     the address of its own peer with
//     "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;".
//   - AWS Application Load Balancer: it appends the client address to
//     X-Forwarded-For (the default "append" mode); trust the subnets the
//     load balancer runs in (for example the VPC's 10.0.0.0/16), as its
//     node addresses change.
//   - Cloudflare: it appends the visitor address to X-Forwarded-For; trust
//     Cloudflare's published ranges (https://www.cloudflare.com/ips/), plus
//     your own proxies behind it. If the origin only accepts connections
//     from Cloudflare, Header("CF-Connecting-IP") is an alternative.
//
// Trust exactly your proxies: a trusted range that contains clients lets
// those clients choose their address. IPv6 users usually hold a whole /64,
// so add GroupIPv6(64) to key them by network rather than by address.
package keyfuncs
