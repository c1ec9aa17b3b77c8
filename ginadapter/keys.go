package ginadapter

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/keyfuncs"
)

// Request adapts a keyfuncs.Func to the *gin.Context, to join it with gin's
// own sources (keyfuncs.Join(Value("user"), Request(keyfuncs.Method()))).
func Request(f keyfuncs.Func) func(*gin.Context) (string, error) {
	return func(c *gin.Context) (string, error) { return f(c.Request) }
}

// ClientIP keys on c.ClientIP(), normalised as keyfuncs.RemoteIP does. It
// returns an error when e believes forwarding headers from arbitrary peers
// (gin's default until e.SetTrustedProxies is called: every client could
// choose its own identity), probing e with forged X-Forwarded-For, X-Real-IP
// and e.RemoteIPHeaders, so call it after configuring e. keyfuncs.RemoteIP
// with trusted proxies is the framework-independent alternative.
func ClientIP(e *gin.Engine) (func(*gin.Context) (string, error), error) {
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

// probes are peers nobody lists as a proxy, and the forged client address.
var probes = []struct{ peer, forged string }{
	{"203.0.113.7:1234", "198.51.100.1"},
	{"[2001:db8::7]:1234", "2001:db8::1"},
}

// checkProxyTrust returns an error when e's ClientIP believes a forwarding
// header from an arbitrary peer; gin keeps its settings unexported.
func checkProxyTrust(e *gin.Engine) error {
	headers := append([]string{"X-Forwarded-For", "X-Real-IP"}, e.RemoteIPHeaders...)
	c := gin.CreateTestContextOnly(nil, e) // ClientIP writes nothing
	for _, p := range probes {
		for _, h := range headers {
			c.Request = &http.Request{Header: http.Header{http.CanonicalHeaderKey(h): {p.forged}}, RemoteAddr: p.peer}
			if h == "" || c.ClientIP() != p.forged { // no request carries a nameless field
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

// Value keys on the value an earlier handler stored with c.Set(key, v): a
// string, integer or fmt.Stringer, as keyfuncs.ContextValue accepts; a
// missing or empty one is an error (400), never a shared key.
func Value(key any) func(*gin.Context) (string, error) {
	source := "gin context value " + fmt.Sprint(key)
	return func(c *gin.Context) (string, error) {
		v, _ := c.Get(key) // nil when missing, which FromValue refuses
		return keyfuncs.FromValue(v, source)
	}
}

// FullPath keys on the matched route pattern (c.FullPath(), such as
// "/orders/:id"); a request that matched no route is an error (400).
func FullPath() func(*gin.Context) (string, error) {
	return func(c *gin.Context) (string, error) {
		if p := c.FullPath(); p != "" {
			return p, nil
		}
		return "", &keyfuncs.Error{Status: http.StatusBadRequest, Source: "gin route", Reason: "missing"}
	}
}
