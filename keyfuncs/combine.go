package keyfuncs

import (
	"reflect"
	"strconv"

	"github.com/go-throttle/throttle/throttle/store"
)

// FirstOf keys on the first of fs that succeeds, such as the user ID header
// when present and the client IP otherwise, or returns the last error. The
// identity is store.JoinID(strconv.Itoa(i), value), i being the index of
// the func that answered, so a user whose ID reads "192.0.2.1" never shares
// a key with the client at that address.
//
// FirstOf and Join work on any key function type, so the pair serves every
// adapter: FirstOf(ginadapter.Value("user"), ginadapter.FullPath()) is a
// ginadapter.KeyFunc. Both copy fs, and panic if it is empty or holds nil.
func FirstOf[F ~func(A) (string, error), A any](fs ...F) F {
	fs = checked("FirstOf", fs)
	return func(a A) (string, error) {
		var err error
		for i, f := range fs {
			var v string
			if v, err = f(a); err == nil {
				return store.JoinID(strconv.Itoa(i), v), nil
			}
		}
		return "", err
	}
}

// Join keys on all of fs together, such as a user and a route, joined with
// store.JoinID so that different lists never give the same identity. It
// returns the first error as is, so put a costly func (BodyHash) last.
func Join[F ~func(A) (string, error), A any](fs ...F) F {
	fs = checked("Join", fs)
	return func(a A) (string, error) {
		var buf [8]string
		vals := buf[:0]
		for _, f := range fs {
			v, err := f(a)
			if err != nil {
				return "", err
			}
			vals = append(vals, v)
		}
		return store.JoinID(vals...), nil
	}
}

func checked[F any](name string, fs []F) []F {
	if len(fs) == 0 {
		panic("keyfuncs: " + name + " needs at least one key function")
	}
	for i, f := range fs {
		if reflect.ValueOf(f).IsNil() {
			panic("keyfuncs: " + name + ": key function " + strconv.Itoa(i) + " is nil")
		}
	}
	return append([]F(nil), fs...)
}
