package keyfuncs

import (
	"net/http"
	"strconv"

	"github.com/go-throttle/throttle/throttle"
)

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
	fs = checkFuncs("FirstOf", fs)
	return func(r *http.Request) (string, error) {
		var err error
		for i, f := range fs {
			var v string
			if v, err = f(r); err == nil {
				return throttle.JoinID(strconv.Itoa(i), v), nil
			}
		}
		return "", err
	}
}

// Join keys on all of fs together, such as a user and a route, joined with
// throttle.JoinID so that different lists of values never give the same
// identity. The first error is returned as is; no partial key is built.
// It panics if fs is empty or holds a nil Func: a programming error.
func Join(fs ...Func) Func {
	fs = checkFuncs("Join", fs)
	return func(r *http.Request) (string, error) {
		var buf [8]string
		vals := buf[:0]
		for _, f := range fs {
			v, err := f(r)
			if err != nil {
				return "", err
			}
			vals = append(vals, v)
		}
		return throttle.JoinID(vals...), nil
	}
}

// checkFuncs copies fs (so a later change to the caller's slice has no
// effect) after checking it.
func checkFuncs(name string, fs []Func) []Func {
	if len(fs) == 0 {
		panic("keyfuncs: " + name + " needs at least one Func")
	}
	for i, f := range fs {
		if f == nil {
			panic("keyfuncs: " + name + ": Func " + strconv.Itoa(i) + " is nil")
		}
	}
	return append([]Func(nil), fs...)
}
