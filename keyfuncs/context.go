package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
)

// ContextValue keys on r.Context().Value(key), typically a user ID that an
// authentication middleware stored there: the most trustworthy identity a
// request carries. That middleware must run before the throttle's. The
// value is read as FromValue reads it, with source "context value".
func ContextValue(key any) Func {
	return func(r *http.Request) (string, error) {
		return FromValue(r.Context().Value(key), "context value")
	}
}

// FromValue turns a value an earlier middleware stored (a context value,
// gin's or echo's c.Get) into an identity, for the key functions of every
// adapter: a string or string kind, any integer kind (such as a named
// `type UserID int64`), or a fmt.Stringer. A nil or empty value gives a
// 400 *Error "missing", a value of another type a 400 *Error "unsupported
// type": a programming error that still must not lump users together.
// source names where the value came from.
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

// valueString converts a stored value; ok is false for unsupported types.
// nil, including a nil pointer behind a fmt.Stringer, gives "".
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
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), true
	}
	return "", false
}

// FromIP turns a client address a framework computed (gin's c.ClientIP,
// echo's c.RealIP) into an identity, normalised as RemoteIP normalises the
// peer's (an IPv4-mapped IPv6 address becomes IPv4), so that one client has
// one identity in every adapter. An empty value gives a 400 *Error
// "missing", anything but a plain IP address (a zone included) a 400
// *Error "not an IP address"; source names where the value came from.
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
