// Package keycompose holds the key-function combinators that keyfuncs,
// ginadapter and echoadapter share, written once over the key function's
// argument type (*http.Request, *gin.Context, echo.Context) so that the three
// build identities exactly alike.
package keycompose

import (
	"reflect"
	"strconv"

	"github.com/go-throttle/throttle/throttle"
)

// FirstOf returns a key function that answers with the first of fs that
// succeeds, tagged with its index (throttle.JoinID(index, value)) so that
// values from different sources never share an identity; when all fail it
// returns the last error. pkg and name word the panic for an empty fs or a
// nil function, which are programming errors found at set-up.
func FirstOf[F ~func(A) (string, error), A any](pkg, name string, fs []F) F {
	fs = checked(pkg, name, fs)
	return func(a A) (string, error) {
		var err error
		for i, f := range fs {
			var v string
			if v, err = f(a); err == nil {
				return throttle.JoinID(strconv.Itoa(i), v), nil
			}
		}
		return "", err
	}
}

// Join returns a key function that answers with throttle.JoinID of all fs'
// values, or the first error; no partial identity is ever built.
func Join[F ~func(A) (string, error), A any](pkg, name string, fs []F) F {
	fs = checked(pkg, name, fs)
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
		return throttle.JoinID(vals...), nil
	}
}

// checked copies fs, so that later changes to the caller's slice have no
// effect, after checking that it is usable.
func checked[F any](pkg, name string, fs []F) []F {
	if len(fs) == 0 {
		panic(pkg + ": " + name + " needs at least one key function")
	}
	for i, f := range fs {
		if reflect.ValueOf(f).IsNil() {
			panic(pkg + ": " + name + ": key function " + strconv.Itoa(i) + " is nil")
		}
	}
	return append([]F(nil), fs...)
}
