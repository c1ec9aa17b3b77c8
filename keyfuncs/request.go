package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-throttle/throttle/internal/storekit"
)

// Func returns the identity a request is throttled under, or an error,
// typically a *Error, when the request does not carry one.
type Func func(r *http.Request) (string, error)

// Static keys every request on s: one lock for the whole policy, or a label.
func Static(s string) Func {
	return func(*http.Request) (string, error) { return s, nil }
}

// Header keys on the first value of the header name, such as the X-User-ID
// a gateway sets: trust only a header your infrastructure sets or strips.
func Header(name string) Func {
	key := textproto.CanonicalMIMEHeaderKey(name)
	errMissing := missing("header " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		if v := r.Header[key]; len(v) > 0 && v[0] != "" {
			return v[0], nil
		}
		return "", errMissing
	}
}

// Cookie keys on the cookie name, for a browser form, which cannot send a
// header. It names a browser, not a user: put it after the user in FirstOf.
func Cookie(name string) Func {
	errMissing := missing("cookie " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		c, err := r.Cookie(name)
		if err != nil || c.Value == "" {
			return "", errMissing
		}
		return c.Value, nil
	}
}

// Query keys on the values of the URL query parameter name, joined with
// storekit.JoinID; a malformed %-escape is refused, lest two requests look alike.
func Query(name string) Func {
	source := "query " + strconv.Quote(name)
	errMissing, errEscape := missing(source), badRequest(source, "malformed escape")
	return func(r *http.Request) (string, error) {
		if r.URL == nil {
			return "", errMissing
		}
		var buf [4]string
		vals, nonEmpty := buf[:0], false
		for q := r.URL.RawQuery; q != ""; {
			var pair string
			pair, q, _ = strings.Cut(q, "&")
			k, v, _ := strings.Cut(pair, "=")
			if k, err := url.QueryUnescape(k); err != nil || k != name {
				continue
			}
			v, err := url.QueryUnescape(v)
			if err != nil {
				return "", errEscape
			}
			vals, nonEmpty = append(vals, v), nonEmpty || v != ""
		}
		if !nonEmpty {
			return "", errMissing
		}
		return storekit.JoinID(vals...), nil
	}
}

// PathValue keys on the wildcard name of the ServeMux route, such as {id}.
func PathValue(name string) Func {
	errMissing := missing("path value " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		if v := r.PathValue(name); v != "" {
			return v, nil
		}
		return "", errMissing
	}
}

// Pattern keys on the http.ServeMux pattern matched, one limit per route;
// the mux sets it as it dispatches, so wrap each route, not the mux.
func Pattern() Func {
	errMissing := missing("route pattern")
	return func(r *http.Request) (string, error) {
		if r.Pattern != "" {
			return r.Pattern, nil
		}
		return "", errMissing
	}
}

// Method keys on the request method, GET if empty, as in net/http.
func Method() Func {
	return func(r *http.Request) (string, error) {
		if r.Method == "" {
			return http.MethodGet, nil
		}
		return r.Method, nil
	}
}

// ContextValue keys on r.Context().Value(key), read as FromValue reads it,
// such as the user ID an authentication middleware stored there.
func ContextValue(key any) Func {
	return func(r *http.Request) (string, error) {
		return FromValue(r.Context().Value(key), "context value")
	}
}

// FromValue turns a value a middleware stored (a context value, gin's or
// echo's c.Get) into an identity: a string or integer kind, or a
// fmt.Stringer; any other type is refused rather than lumping users
// together. source names the value in the *Error.
func FromValue(v any, source string) (string, error) {
	s, ok := valueString(v)
	switch {
	case !ok:
		return "", badRequest(source, "unsupported type (want a string, fmt.Stringer or integer)")
	case s == "":
		return "", missing(source)
	}
	return s, nil
}

func valueString(v any) (s string, ok bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case fmt.Stringer:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return "", true
		}
		return v.String(), true
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprint(v), true
	}
	return "", false
}

// FromIP turns an address a framework computed (gin's c.ClientIP, echo's
// c.RealIP) into the identity RemoteIP would give it; source names it in
// the *Error.
func FromIP(s, source string) (string, error) {
	if s == "" {
		return "", missing(source)
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", badRequest(source, "not an IP address")
	}
	return a.Unmap().String(), nil
}

// FirstOf keys on the first of fs that succeeds, as storekit.JoinID(index,
// value), so that a user named "192.0.2.1" never shares a key with the
// client at that address, or returns the last error. FirstOf and Join take
// any key function type, copy fs, and panic if it is empty or holds nil.
func FirstOf[F ~func(A) (string, error), A any](fs ...F) F {
	fs = checked("FirstOf", fs)
	return func(a A) (string, error) {
		var err error
		for i, f := range fs {
			var v string
			if v, err = f(a); err == nil {
				return storekit.JoinID(strconv.Itoa(i), v), nil
			}
		}
		return "", err
	}
}

// Join keys on all of fs together, joined with storekit.JoinID so that two
// lists never give one identity, or returns the first error.
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
		return storekit.JoinID(vals...), nil
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
