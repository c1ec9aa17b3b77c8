package fiberadapter

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/go-throttle/throttle/keyfuncs"
)

// Request adapts a keyfuncs.Func to the fiber.Ctx, on the request converted
// to an *http.Request, for the sources this package has no native key for
// (keyfuncs.IdempotencyKey, BodyHash, Query): the same identity as in the
// net/http, gin and echo adapters, at the cost of the conversion.
func Request(f keyfuncs.Func) func(fiber.Ctx) (string, error) {
	return func(c fiber.Ctx) (string, error) {
		var r http.Request
		if err := fasthttpadaptor.ConvertRequest(c.RequestCtx(), &r, true); err != nil {
			return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "request", Reason: "not convertible"}
		}
		return f(&r)
	}
}

// nonEmpty keys on what get returns, copied out of fasthttp's buffers, or
// refuses the request with a 400 naming source as keyfuncs does.
func nonEmpty(source string, get func(c fiber.Ctx) string) func(fiber.Ctx) (string, error) {
	errMissing := &keyfuncs.Error{Status: http.StatusBadRequest, Source: source, Reason: "missing"}
	return func(c fiber.Ctx) (string, error) {
		if v := get(c); v != "" {
			return strings.Clone(v), nil
		}
		return "", errMissing
	}
}

// Header keys on the first value of the header name, as keyfuncs.Header.
func Header(name string) func(fiber.Ctx) (string, error) {
	return nonEmpty("header "+strconv.Quote(name), func(c fiber.Ctx) string { return c.Get(name) })
}

// Cookie keys on the cookie name, as keyfuncs.Cookie: a browser, not a
// user, so put it after the user in FirstOf.
func Cookie(name string) func(fiber.Ctx) (string, error) {
	return nonEmpty("cookie "+strconv.Quote(name), func(c fiber.Ctx) string { return c.Cookies(name) })
}

// Param keys on the route parameter name (c.Params, such as the :id of
// "/jobs/:id/run"), as fiber gives it.
func Param(name string) func(fiber.Ctx) (string, error) {
	return nonEmpty("route parameter "+strconv.Quote(name), func(c fiber.Ctx) string { return c.Params(name) })
}

// Route keys on the matched route pattern (c.Route().Path, such as
// "/orders/:id"), one limit per route.
func Route() func(fiber.Ctx) (string, error) {
	return nonEmpty("fiber route", func(c fiber.Ctx) string { return c.Route().Path })
}

// Value keys on the value an earlier handler stored with c.Locals(key, v):
// a string, integer or fmt.Stringer, as keyfuncs.FromValue accepts; a
// missing or empty one is an error (400), never a shared key.
func Value(key any) func(fiber.Ctx) (string, error) {
	source := "fiber local " + strconv.Quote(fmt.Sprint(key))
	return func(c fiber.Ctx) (string, error) { return keyfuncs.FromValue(c.Locals(key), source) }
}

var errBadRemote = &keyfuncs.Error{Status: http.StatusBadRequest, Source: "remote address", Reason: "not an IP address"}

// RemoteIP keys on the client's address as keyfuncs.RemoteIP(cfg...) does,
// with the same identity: the peer's, or, from one of cfg's trusted
// proxies, the one X-Forwarded-For (or Forwarded) names, read right to
// left; never fiber's c.IP(), which reads a ProxyHeader from the left. A
// peer that is no IP address (a Unix socket) is refused with a 400. It
// panics as keyfuncs.RemoteIP does.
func RemoteIP(cfg ...keyfuncs.IPConfig) func(fiber.Ctx) (string, error) {
	key := keyfuncs.RemoteIP(cfg...)
	if len(cfg) == 0 || len(cfg[0].TrustedProxies) == 0 && cfg[0].IPv6Prefix == 0 {
		return func(c fiber.Ctx) (string, error) {
			addr, ok := peer(c)
			if !ok {
				return "", errBadRemote
			}
			return addr.Addr().String(), nil
		}
	}
	field := "X-Forwarded-For"
	if cfg[0].Forwarded {
		field = "Forwarded"
	}
	return func(c fiber.Ctx) (string, error) {
		addr, ok := peer(c)
		if !ok {
			return "", errBadRemote
		}
		r := http.Request{RemoteAddr: addr.String(), Header: http.Header{}}
		for _, v := range c.Request().Header.PeekAll(field) {
			r.Header[field] = append(r.Header[field], string(v))
		}
		return key(&r)
	}
}

// peer is the address of c's peer, IPv4-mapped as IPv4, without zone.
func peer(c fiber.Ctx) (netip.AddrPort, bool) {
	tcp, ok := c.RequestCtx().RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	a, ok := netip.AddrFromSlice(tcp.IP)
	if !ok || a.IsUnspecified() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(tcp.Port)), true //nolint:gosec // a TCP port fits
}
