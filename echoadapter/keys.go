package echoadapter

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/keyfuncs"
)

// KeyFunc returns the identity an echo request is throttled under, like
// keyfuncs.Func but with the echo.Context at hand. It returns an error
// (preferably a *keyfuncs.Error) when it cannot build one; the request is
// then answered 400 instead of sharing a fallback key with others.
type KeyFunc func(c echo.Context) (string, error)

// Request adapts a keyfuncs.Func, which reads c.Request(). Middleware(l, f)
// is ContextMiddleware(l, Request(f)).
func Request(f keyfuncs.Func) KeyFunc {
	return func(c echo.Context) (string, error) { return f(c.Request()) }
}

// RealIP keys on c.RealIP(), normalised as keyfuncs.RemoteIP does
// (IPv4-mapped IPv6 addresses become IPv4) so that the same peer gives the
// same identity in every adapter. A value that is not an IP address is
// rejected with a *keyfuncs.Error (400).
//
// c.RealIP is only as trustworthy as the Echo's IPExtractor. Unset (the
// echo v4 default), it believes the leftmost X-Forwarded-For address or
// X-Real-IP, which any client can set: keyed on that, a client picks a new
// identity per request and is never throttled. So RealIP refuses an e
// whose IPExtractor is nil (or a nil e) with an error saying what to set:
// echo.ExtractIPDirect() when clients connect directly, or
// echo.ExtractIPFromXFFHeader / echo.ExtractIPFromRealIPHeader with trust
// options (echo.TrustIPRange and the like) naming your proxies behind them.
//
// Call RealIP after setting e.IPExtractor, typically once at start-up, and
// use the KeyFunc on e's routes. keyfuncs.RemoteIP with
// IPConfig.TrustedProxies, through Request, is the framework-independent alternative.
func RealIP(e *echo.Echo) (KeyFunc, error) {
	if e == nil {
		return nil, errors.New("echoadapter: RealIP: nil *echo.Echo; pass the Echo whose routes use the key, after setting its IPExtractor")
	}
	if e.IPExtractor == nil {
		return nil, errors.New("echoadapter: RealIP: e.IPExtractor is nil, so c.RealIP believes the X-Forwarded-For " +
			"and X-Real-IP headers any client can set, and every client could choose its own identity; before RealIP, " +
			"set e.IPExtractor = echo.ExtractIPDirect() when clients connect directly, or, behind proxies, " +
			"echo.ExtractIPFromXFFHeader(echo.TrustIPRange(...)) or echo.ExtractIPFromRealIPHeader(echo.TrustIPRange(...)) " +
			"trusting your proxies' addresses")
	}
	return func(c echo.Context) (string, error) {
		return keyfuncs.FromIP(c.RealIP(), "echo real IP")
	}, nil
}

// Value keys on the value an earlier handler stored with c.Set(name, v),
// typically the authenticated user's ID. Strings, integers and fmt.Stringer
// values are accepted, as by keyfuncs.ContextValue; a missing, empty or
// other value is an error (the request is answered 400), so that a mis-ordered chain fails
// loudly instead of throttling everybody under one key.
func Value(name string) KeyFunc {
	source := "echo context value " + strconv.Quote(name)
	return func(c echo.Context) (string, error) {
		v := c.Get(name)
		if v == nil {
			return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
		}
		return keyfuncs.FromValue(v, source)
	}
}

// Path keys on the matched route pattern (c.Path(), such as "/orders/:id"),
// to give every route its own key under one policy; join it with a user
// identity. A request that matched no route is rejected rather than put
// under one shared key.
func Path() KeyFunc {
	return func(c echo.Context) (string, error) {
		if p := c.Path(); p != "" {
			return p, nil
		}
		return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "echo route", Reason: "missing"}
	}
}
