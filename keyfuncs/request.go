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

	"github.com/go-throttle/throttle/throttle/store"
)

// Func returns the identity a request is throttled under, which the
// middleware escapes and bounds into the stored key. A Func that cannot
// build one returns an error, typically a *Error.
type Func func(r *http.Request) (string, error)

// Static keys every request on s: alone, one lock for the whole policy (one
// costly report at a time); joined with other funcs, a label.
func Static(s string) Func {
	return func(*http.Request) (string, error) { return s, nil }
}

// Header keys on the first value of the header name, such as an X-User-ID
// an authenticating gateway sets; missing or empty, a 400 *Error. Trust
// only a header your infrastructure sets or strips.
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

// Cookie keys on the cookie name, the key of a browser form, which cannot
// send a header; missing, empty or malformed, a 400 *Error. It identifies a
// browser, not a user: put it after the authenticated user in FirstOf.
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
// store.JoinID so that ?id=a&id=b and ?id=a:b differ. Absent, all empty, or
// with a malformed %-escape (two requests would look alike), a 400 *Error.
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
		return store.JoinID(vals...), nil
	}
}

// PathValue keys on the wildcard name of the http.ServeMux route matched,
// such as {id} in "POST /orders/{id}"; missing or empty, a 400 *Error.
func PathValue(name string) Func {
	errMissing := missing("path value " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		if v := r.PathValue(name); v != "" {
			return v, nil
		}
		return "", errMissing
	}
}

// Pattern keys on the http.ServeMux pattern matched, such as
// "POST /orders/{id}": one limit per route. The mux sets it as it
// dispatches, so install the middleware on each route; without one, a 400
// *Error with source "route pattern".
func Pattern() Func {
	errMissing := missing("route pattern")
	return func(r *http.Request) (string, error) {
		if r.Pattern != "" {
			return r.Pattern, nil
		}
		return "", errMissing
	}
}

// Method keys on the request method (GET if empty, as in net/http), for a
// route whose pattern names none.
func Method() Func {
	return func(r *http.Request) (string, error) {
		if r.Method == "" {
			return http.MethodGet, nil
		}
		return r.Method, nil
	}
}

// ContextValue keys on r.Context().Value(key), read as FromValue reads it:
// typically a user ID an authentication middleware, run first, stored
// there, the most trustworthy identity a request carries.
func ContextValue(key any) Func {
	return func(r *http.Request) (string, error) {
		return FromValue(r.Context().Value(key), "context value")
	}
}

// FromValue turns a value an earlier middleware stored (a context value,
// gin's or echo's c.Get) into an identity: a string or integer kind, or a
// fmt.Stringer. Nil or empty gives a 400 *Error "missing", another type a
// 400 *Error "unsupported type", so that a programming error never lumps
// users together; source names where the value came from.
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
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		return rv.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), true
	}
	return "", false
}

// FromIP turns an address a framework computed (gin's c.ClientIP, echo's
// c.RealIP) into the identity RemoteIP would give it, so that a client has
// one identity in every adapter; empty or not a plain IP address, a 400
// *Error whose source names where it came from.
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
