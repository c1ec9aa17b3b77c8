package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
)

// ContextValue keys on r.Context().Value(key), typically a user ID that an
// authentication middleware stored there, which is the most trustworthy
// identity a request carries. The value may be a string (or a type whose
// underlying type is string), a fmt.Stringer, or any integer kind (int,
// int64, uint32, a named type such as `type UserID int64`, ...).
//
// A nil or empty value gives a 400 *Error with source "context value" and
// reason "missing"; a value of another type gives reason "unsupported
// type", a programming error that still must not lump users together. The
// middleware that sets the value must run before the throttle middleware.
func ContextValue(key any) Func {
	const source = "context value"
	return func(r *http.Request) (string, error) {
		return FromValue(r.Context().Value(key), source)
	}
}

// FromValue turns a value that an earlier middleware stored (a context value,
// gin's c.Get, echo's c.Get) into an identity, with the rules of
// ContextValue: strings and string kinds, integer kinds and fmt.Stringer
// values are accepted. A nil or empty value gives a 400 *Error "missing", a
// value of another type a 400 *Error "unsupported type"; source names where
// the value came from in that error. It serves key functions for other
// frameworks.
func FromValue(v any, source string) (string, error) {
	s, ok := valueString(v)
	switch {
	case !ok:
		return "", &Error{Status: http.StatusBadRequest, Source: source,
			Reason: "unsupported type (want a string, fmt.Stringer or integer)"}
	case s == "":
		return "", missing(source)
	}
	return s, nil
}

// valueString converts a context value; ok is false for unsupported types.
// nil values, including nil pointers behind a fmt.Stringer, give "".
func valueString(v any) (s string, ok bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case string:
		return v, true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
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

// FromIP turns a client address that a framework computed (gin's
// c.ClientIP, echo's c.RealIP) into an identity, normalised as RemoteIP
// normalises the peer's (an IPv4-mapped IPv6 address becomes IPv4), so that
// one client has one identity in every adapter. An empty value gives a 400
// *Error "missing", anything but a plain IP address (a zone included) a 400
// *Error "not an IP address"; source names where the value came from.
func FromIP(s, source string) (string, error) {
	if s == "" {
		return "", &Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", &Error{Status: http.StatusBadRequest, Source: source, Reason: "not an IP address"}
	}
	return a.Unmap().String(), nil
}
