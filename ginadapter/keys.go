package ginadapter

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

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
// returns one from a TrustedPlatform header verbatim) is rejected with a
// *keyfuncs.Error (400).
//
// c.ClientIP is only as trustworthy as the Engine's proxy settings, and by
// default gin trusts every peer as a proxy and believes X-Forwarded-For and
// X-Real-IP, which any client can set: keyed on that, a client picks a new
// identity per request and is never throttled. So ClientIP checks e's
// actual behaviour before it hands out a KeyFunc: it asks e for the client
// address of two probe requests, from 203.0.113.7 and from 2001:db8::7
// (documentation addresses nobody lists as a proxy), each carrying a forged
// address in X-Forwarded-For, X-Real-IP or one of e.RemoteIPHeaders. If e
// believes any of them, ClientIP returns an error that says how to fix the
// configuration: call e.SetTrustedProxies with your proxies' addresses, or
// with nil when clients connect directly. A nil e is an error too.
//
// Call ClientIP after e is configured (SetTrustedProxies, TrustedPlatform,
// RemoteIPHeaders, ForwardedByClientIP), typically once at start-up, and use
// the KeyFunc on e's routes: later changes to e are not checked again. A
// TrustedPlatform such as gin.PlatformCloudflare is an explicit choice and
// is not refused; it is only safe when every request really comes through
// that platform. keyfuncs.RemoteIP with IPConfig.TrustedProxies, through
// Request, is the framework-independent alternative.
func ClientIP(e *gin.Engine) (KeyFunc, error) {
	if e == nil {
		return nil, errors.New("ginadapter: ClientIP: nil *gin.Engine; pass the engine whose routes use the key, after calling its SetTrustedProxies")
	}
	if err := checkProxyTrust(e); err != nil {
		return nil, err
	}
	return func(c *gin.Context) (string, error) {
		return keyfuncs.FromIP(c.ClientIP(), "gin client IP")
	}, nil
}

// probes are the requests checkProxyTrust sends through gin's ClientIP: a
// peer from documentation space (RFC 5737, RFC 3849) that nobody lists as a
// proxy, and the forged client address it puts in a forwarding header.
var probes = []struct{ peer, forged string }{
	{"203.0.113.7:1234", "198.51.100.1"},
	{"[2001:db8::7]:1234", "2001:db8::1"},
}

// checkProxyTrust returns an error when e's ClientIP believes a forwarding
// header sent by an arbitrary peer. gin keeps its trusted proxies
// unexported, so it tests what e does rather than how it is configured.
func checkProxyTrust(e *gin.Engine) error {
	// The defaults and whatever e reads, named as the user spelled them.
	headers := []string{"X-Forwarded-For", "X-Real-IP"}
	for _, h := range e.RemoteIPHeaders {
		if h != "" && !slices.ContainsFunc(headers, func(g string) bool { return strings.EqualFold(g, h) }) {
			headers = append(headers, h)
		}
	}
	c := gin.CreateTestContextOnly(discardWriter{}, e)
	for _, p := range probes {
		for _, h := range headers {
			c.Request = &http.Request{
				Method:     http.MethodGet,
				URL:        &url.URL{Path: "/"},
				Header:     http.Header{http.CanonicalHeaderKey(h): {p.forged}},
				RemoteAddr: p.peer,
			}
			if c.ClientIP() != p.forged {
				continue
			}
			peer, _, _ := net.SplitHostPort(p.peer)
			if strings.EqualFold(e.TrustedPlatform, h) {
				return fmt.Errorf("ginadapter: ClientIP: the engine's TrustedPlatform is %s, a header any client can set, "+
					"so a request from %s chooses its own identity; set TrustedPlatform only to a header your platform "+
					"overwrites (such as gin.PlatformCloudflare), or leave it empty and call e.SetTrustedProxies, before ClientIP", h, peer)
			}
			return fmt.Errorf("ginadapter: ClientIP: the engine believes %s from arbitrary peers (a request from %s, "+
				"which is no proxy of yours, is keyed on the address in its %s header, so every client can choose its own "+
				"identity; gin trusts every peer as a proxy until Engine.SetTrustedProxies is called); call "+
				"e.SetTrustedProxies with your proxies' addresses, or with nil when clients connect directly, before ClientIP",
				h, peer, h)
		}
	}
	return nil
}

// discardWriter is the http.ResponseWriter of the probe context; nothing is
// ever written to it.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

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
