package keyfuncs

import "github.com/go-throttle/throttle/internal/keycompose"

// FirstOf is a fallback chain: it keys on the first of fs that succeeds,
// such as the user ID header when present and the client IP otherwise. The
// identity is throttle.JoinID(strconv.Itoa(i), value), i being the index of
// the func that answered, so a user whose ID happens to read "192.0.2.1"
// never shares a key with the client at that address.
//
// If every func fails, FirstOf returns the last func's error (for the usual
// FirstOf(Header(...), RemoteIP()) that is the one about the remote address).
// It panics if fs is empty or holds a nil Func: a programming error.
func FirstOf(fs ...Func) Func {
	return keycompose.FirstOf("keyfuncs", "FirstOf", fs)
}

// Join keys on all of fs together, such as a user and a route, joined with
// throttle.JoinID so that different lists of values never give the same
// identity. The first error is returned as is; no partial key is built.
// It panics if fs is empty or holds a nil Func: a programming error.
func Join(fs ...Func) Func {
	return keycompose.Join("keyfuncs", "Join", fs)
}
