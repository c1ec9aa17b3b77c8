// Package keyfuncs builds the identity a request is throttled under: who
// (a user, a client address) and what (a route, a method, the body). A Func
// takes an *http.Request, so net/http, gin and echo build the same keys:
//
//	// one submission per user and route, whatever the path values
//	key := keyfuncs.Join(keyfuncs.ContextValue(userKey{}), keyfuncs.Method(), keyfuncs.Pattern())
package keyfuncs
