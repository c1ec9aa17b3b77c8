// Package keyfuncs builds the identity a request is throttled under: who
// (a user, a client address) and what (a route, a method, the body). Every
// Func takes an *http.Request, so net/http, gin (c.Request) and echo
// (c.Request()) build the same keys, and Funcs compose:
//
//	// the user ID when the gateway set one, the client address otherwise
//	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
//
//	// one submission per user and route, whatever the path values
//	key := keyfuncs.Join(keyfuncs.ContextValue(userKey{}), keyfuncs.Method(), keyfuncs.Pattern())
//
// Behind a proxy, RemoteIP is the proxy. ForwardedIP then reads the
// addresses the proxies you list appended, from the right: the left end is
// written by the client, who can put anything there.
package keyfuncs
