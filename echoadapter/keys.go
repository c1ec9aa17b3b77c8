package echoadapter

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/keyfuncs"
)

// Request adapts a keyfuncs.Func to the echo.Context, to join it with
// echo's own sources (keyfuncs.Join(Value("user"), Request(keyfuncs.Method()))).
func Request(f keyfuncs.Func) func(echo.Context) (string, error) {
	return func(c echo.Context) (string, error) { return f(c.Request()) }
}

// RealIP keys on c.RealIP(), normalised as keyfuncs.RemoteIP does. It
// returns an error when e.IPExtractor is nil, under which c.RealIP believes
// headers any client can set: set echo.ExtractIPDirect(), or behind
// proxies echo.ExtractIPFromXFFHeader(echo.TrustIPRange(...)), first.
func RealIP(e *echo.Echo) (func(echo.Context) (string, error), error) {
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

// Value keys on the value an earlier handler stored with c.Set(name, v): a
// string, integer or fmt.Stringer, as keyfuncs.ContextValue accepts; a
// missing or empty one is an error (400), never a shared key.
func Value(name string) func(echo.Context) (string, error) {
	source := "echo context value " + strconv.Quote(name)
	return func(c echo.Context) (string, error) { return keyfuncs.FromValue(c.Get(name), source) }
}

// Path keys on the matched route pattern (c.Path(), such as "/orders/:id");
// a request that matched no route is an error (400).
func Path() func(echo.Context) (string, error) {
	return func(c echo.Context) (string, error) {
		if p := c.Path(); p != "" {
			return p, nil
		}
		return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "echo route", Reason: "missing"}
	}
}
