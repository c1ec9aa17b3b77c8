package ginadapter

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/keyfuncs"
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
		return keyfuncs.FromValue(v, source)
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
