package ginadapter_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
)

// newEngine returns a gin.New() engine that trusts proxies (nil: none).
func newEngine(t *testing.T, proxies []string) *gin.Engine {
	t.Helper()
	e := gin.New()
	require.NoError(t, e.SetTrustedProxies(proxies))
	return e
}

// keyOf runs key on a context of e for a request from peer carrying
// headers, as gin would build it for a route of e.
func keyOf(t *testing.T, e *gin.Engine, key func(*gin.Context) (string, error), peer string, headers map[string]string) (string, error) {
	t.Helper()
	c := gin.CreateTestContextOnly(httptest.NewRecorder(), e)
	c.Request = httptest.NewRequest(http.MethodPost, "/submit", nil)
	c.Request.RemoteAddr = peer
	for k, v := range headers {
		c.Request.Header.Set(k, v)
	}
	return key(c)
}

// ClientIP refuses every engine that believes a forwarding header from an
// arbitrary peer, with an error that names the fix.
func TestClientIPRefusesUnsafeEngines(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T) *gin.Engine
		want  []string // substrings of the error
	}{
		{"nil engine", func(*testing.T) *gin.Engine { return nil }, []string{"nil *gin.Engine", "SetTrustedProxies"}},
		{"default engine", func(*testing.T) *gin.Engine { return gin.New() },
			[]string{"X-Forwarded-For", "from arbitrary peers", "SetTrustedProxies", "with nil when clients connect directly"}},
		{"gin.Default", func(*testing.T) *gin.Engine { return gin.Default() }, []string{"SetTrustedProxies"}},
		// Only the IPv4 probe catches these ...
		{"all IPv4", func(t *testing.T) *gin.Engine { return newEngine(t, []string{"0.0.0.0/0"}) },
			[]string{"203.0.113.7", "SetTrustedProxies"}},
		{"203.0.0.0/8", func(t *testing.T) *gin.Engine { return newEngine(t, []string{"10.0.0.0/8", "203.0.0.0/8"}) },
			[]string{"203.0.113.7", "SetTrustedProxies"}},
		// ... and only the IPv6 probe these.
		{"all IPv6", func(t *testing.T) *gin.Engine { return newEngine(t, []string{"::/0"}) },
			[]string{"2001:db8::7", "SetTrustedProxies"}},
		{"2001:db8::/32", func(t *testing.T) *gin.Engine { return newEngine(t, []string{"10.0.0.0/8", "2001:db8::/32"}) },
			[]string{"2001:db8::7", "SetTrustedProxies"}},
		{"X-Real-IP only", func(*testing.T) *gin.Engine {
			e := gin.New()
			e.RemoteIPHeaders = []string{"X-Real-IP"}
			return e
		}, []string{"X-Real-IP", "SetTrustedProxies"}},
		{"custom RemoteIPHeaders", func(*testing.T) *gin.Engine {
			e := gin.New()
			e.RemoteIPHeaders = []string{"true-client-ip"}
			return e
		}, []string{"true-client-ip", "SetTrustedProxies"}},
		// A platform header does not make the default proxies safe: the
		// probe, which sends none, still gets X-Forwarded-For believed.
		{"platform with default proxies", func(*testing.T) *gin.Engine {
			e := gin.New()
			e.TrustedPlatform = gin.PlatformCloudflare
			return e
		}, []string{"X-Forwarded-For", "SetTrustedProxies"}},
		{"platform header any client sets", func(t *testing.T) *gin.Engine {
			e := newEngine(t, nil)
			e.TrustedPlatform = "x-forwarded-for"
			return e
		}, []string{"TrustedPlatform is X-Forwarded-For", "gin.PlatformCloudflare"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ginadapter.ClientIP(tc.build(t))
			require.Error(t, err, "ClientIP")
			require.Nil(t, key, "ClientIP's key")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Regexp(t, "^ginadapter: ClientIP: ", err.Error())
		})
	}
}

// Engines that do not believe a stranger's headers are accepted.
func TestClientIPAcceptsSafeEngines(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T) *gin.Engine
	}{
		{"no proxies", func(t *testing.T) *gin.Engine { return newEngine(t, nil) }},
		{"empty list", func(t *testing.T) *gin.Engine { return newEngine(t, []string{}) }},
		{"private proxies", func(t *testing.T) *gin.Engine {
			return newEngine(t, []string{"10.0.0.0/8", "192.168.0.1", "fd00::/8"})
		}},
		{"ForwardedByClientIP off", func(*testing.T) *gin.Engine {
			e := gin.New() // every proxy trusted, but no header read
			e.ForwardedByClientIP = false
			return e
		}},
		{"no RemoteIPHeaders", func(*testing.T) *gin.Engine {
			e := gin.New()
			e.RemoteIPHeaders = nil
			return e
		}},
		{"platform and no proxies", func(t *testing.T) *gin.Engine {
			e := newEngine(t, nil)
			e.TrustedPlatform = gin.PlatformCloudflare
			return e
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ginadapter.ClientIP(tc.build(t))
			require.NoError(t, err, "ClientIP")
			require.NotNil(t, key, "ClientIP's key")
		})
	}
}

// The key is the peer, unless the peer is a trusted proxy; then it is the
// address that proxy forwarded.
func TestClientIPKey(t *testing.T) {
	spoofed := map[string]string{"X-Forwarded-For": "198.51.100.9", "X-Real-IP": "198.51.100.10"}
	cases := []struct {
		name    string
		proxies []string
		peer    string
		headers map[string]string
		want    string
	}{
		{"direct, spoofed headers ignored", nil, "203.0.113.7:1234", spoofed, "203.0.113.7"},
		{"direct IPv6", nil, "[2001:db8::7]:1234", spoofed, "2001:db8::7"},
		{"direct IPv4-mapped", nil, "[::ffff:203.0.113.7]:1234", nil, "203.0.113.7"},
		{"from a trusted proxy", []string{"10.0.0.0/8"}, "10.1.2.3:1234",
			map[string]string{"X-Forwarded-For": "198.51.100.9"}, "198.51.100.9"},
		{"through two trusted proxies", []string{"10.0.0.0/8"}, "10.1.2.3:1234",
			map[string]string{"X-Forwarded-For": "192.0.2.66, 198.51.100.9, 10.9.9.9"}, "198.51.100.9"},
		{"from a stranger", []string{"10.0.0.0/8"}, "203.0.113.7:1234",
			map[string]string{"X-Forwarded-For": "198.51.100.9"}, "203.0.113.7"},
		{"trusted proxy, IPv4-mapped forwarded", []string{"10.0.0.0/8"}, "10.1.2.3:1234",
			map[string]string{"X-Forwarded-For": "::ffff:198.51.100.9"}, "198.51.100.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.proxies)
			key, err := ginadapter.ClientIP(e)
			require.NoError(t, err)
			got, err := keyOf(t, e, key, tc.peer, tc.headers)
			require.NoError(t, err)
			require.Equal(t, tc.want, got, "key")
		})
	}
}

// Values that are no usable address are a *keyfuncs.Error answered 400.
func TestClientIPKeyErrors(t *testing.T) {
	e := newEngine(t, nil)
	e.TrustedPlatform = gin.PlatformCloudflare // gin returns its value verbatim
	key, err := ginadapter.ClientIP(e)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, peer, platform, reason string
	}{
		{"platform value not an address", "203.0.113.7:1234", "not-an-ip", "not an IP address"},
		{"zone", "203.0.113.7:1234", "fe80::1%eth0", "not an IP address"},
		{"no peer address", "somewhere", "", "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h map[string]string
			if tc.platform != "" {
				h = map[string]string{gin.PlatformCloudflare: tc.platform}
			}
			got, err := keyOf(t, e, key, tc.peer, h)
			var ke *keyfuncs.Error
			require.ErrorAs(t, err, &ke, "key %q", got)
			require.Equal(t, http.StatusBadRequest, ke.Status, "the *keyfuncs.Error's status")
			require.Equal(t, tc.reason, ke.Reason, "the *keyfuncs.Error's reason")
		})
	}
	got, err := keyOf(t, e, key, "203.0.113.7:1234", map[string]string{gin.PlatformCloudflare: "198.51.100.9"})
	require.NoError(t, err, "platform key")
	require.Equal(t, "198.51.100.9", got, "platform key")
}

// Through the middleware: one peer forging a new X-Forwarded-For per
// request is still one client, while distinct clients behind a trusted
// proxy stay distinct.
func TestClientIPMiddleware(t *testing.T) {
	ok := func(c *gin.Context) { c.Status(http.StatusOK) }
	serve := func(t *testing.T, proxies []string, peer string, want ...int) {
		t.Helper()
		g, _ := submitGuard(t)
		e := newEngine(t, proxies)
		key, err := ginadapter.ClientIP(e)
		require.NoError(t, err)
		e.POST("/submit", ginadapter.Middleware(g, key), ok)
		for i, code := range want {
			r := adaptertest.Submit("")
			r.RemoteAddr = peer
			r.Header.Set("X-Forwarded-For", []string{"198.51.100.1", "198.51.100.2"}[i])
			adaptertest.Status(t, adaptertest.Serve(e, r), code)
		}
	}
	t.Run("spoofing direct client", func(t *testing.T) {
		serve(t, nil, "203.0.113.7:1234", http.StatusOK, http.StatusTooManyRequests)
	})
	t.Run("spoofing client outside the proxies", func(t *testing.T) {
		serve(t, []string{"10.0.0.0/8"}, "203.0.113.7:1234", http.StatusOK, http.StatusTooManyRequests)
	})
	t.Run("two clients behind a trusted proxy", func(t *testing.T) {
		serve(t, []string{"10.0.0.0/8"}, "10.1.2.3:1234", http.StatusOK, http.StatusOK)
	})
}
