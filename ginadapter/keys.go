package ginadapter

import (
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
)

// KeyFunc returns the identity a gin request is throttled under, like
// keyfuncs.Func but with the *gin.Context at hand. It returns an error
// (preferably a *keyfuncs.Error) when it cannot build one; the request is
// then answered 400 instead of sharing a fallback key with others.
type KeyFunc func(c *gin.Context) (string, error)

// Request adapts a keyfuncs.Func, which reads c.Request. Middleware(l, f)
// is ContextMiddleware(l, Request(f)).
func Request(f keyfuncs.Func) KeyFunc {
	return func(c *gin.Context) (string, error) { return f(c.Request) }
}

// ClientIP keys on c.ClientIP(), normalised as keyfuncs.RemoteIP does
// (IPv4-mapped IPv6 addresses become IPv4) so that the same peer gives the
// same identity in every adapter. A value that is not an IP address (gin
// returns one from a TrustedPlatform header verbatim) is rejected.
//
// It is only as trustworthy as the Engine's proxy settings: by default gin
// trusts every peer and believes X-Forwarded-For and X-Real-IP, which any
// client can set. Call Engine.SetTrustedProxies first, or use
// Request(keyfuncs.ForwardedIP(trusted)).
func ClientIP() KeyFunc {
	return func(c *gin.Context) (string, error) {
		s := c.ClientIP()
		if s == "" {
			return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "gin client IP", Reason: "missing"}
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "gin client IP", Reason: "not an IP address"}
		}
		return a.Unmap().String(), nil
	}
}

// Value keys on the value an earlier handler stored with c.Set(key, v),
// typically the authenticated user's ID. Strings, integers and fmt.Stringer
// values are accepted, as by keyfuncs.ContextValue; a missing, empty or
// other value is an error (the request is answered 400), so that a mis-ordered chain fails
// loudly instead of throttling everybody under one key.
func Value(key any) KeyFunc {
	source := "gin context value " + fmt.Sprint(key)
	return func(c *gin.Context) (string, error) {
		v, ok := c.Get(key)
		if !ok {
			return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
		}
		return valueString(v, source)
	}
}

// FullPath keys on the matched route pattern (c.FullPath(), such as
// "/orders/:id"), to give every route its own key under one policy; join it
// with a user identity. A request that matched no route is rejected rather
// than put under one shared key.
func FullPath() KeyFunc {
	return func(c *gin.Context) (string, error) {
		if p := c.FullPath(); p != "" {
			return p, nil
		}
		return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "gin route", Reason: "missing"}
	}
}

// FirstOf returns the identity of the first of fs that succeeds, tagged
// with its position exactly as keyfuncs.FirstOf does (so that a user ID and
// an IP address that happen to be equal do not share a key). When all fail
// it returns the last error. It panics if fs is empty or holds nil.
func FirstOf(fs ...KeyFunc) KeyFunc {
	fs = checked("FirstOf", fs)
	return func(c *gin.Context) (string, error) {
		var err error
		for i, f := range fs {
			var id string
			if id, err = f(c); err == nil {
				return throttle.JoinID(strconv.Itoa(i), id), nil
			}
		}
		return "", err
	}
}

// Join combines the identities of all fs (for example a user and a route)
// with throttle.JoinID, as keyfuncs.Join does; any error fails it. It
// panics if fs is empty or holds nil.
func Join(fs ...KeyFunc) KeyFunc {
	fs = checked("Join", fs)
	return func(c *gin.Context) (string, error) {
		parts := make([]string, len(fs))
		for i, f := range fs {
			id, err := f(c)
			if err != nil {
				return "", err
			}
			parts[i] = id
		}
		return throttle.JoinID(parts...), nil
	}
}

func checked(name string, fs []KeyFunc) []KeyFunc {
	if len(fs) == 0 {
		panic("ginadapter: " + name + " needs at least one KeyFunc")
	}
	for _, f := range fs {
		if f == nil {
			panic("ginadapter: " + name + " got a nil KeyFunc")
		}
	}
	return append([]KeyFunc(nil), fs...)
}

// valueString turns a context value into an identity with the rules of
// keyfuncs.ContextValue: strings and string kinds, integer kinds and
// fmt.Stringer values; nil (also a nil pointer) and "" are missing.
func valueString(v any, source string) (string, error) {
	var s string
	switch x := v.(type) {
	case nil:
	case string:
		s = x
	case fmt.Stringer:
		if rv := reflect.ValueOf(x); rv.Kind() != reflect.Pointer || !rv.IsNil() {
			s = x.String()
		}
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.String:
			s = rv.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s = strconv.FormatInt(rv.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			s = strconv.FormatUint(rv.Uint(), 10)
		default:
			return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: source,
				Reason: "unsupported type (want a string, fmt.Stringer or integer)"}
		}
	}
	if s == "" {
		return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
	}
	return s, nil
}
