package echoadapter_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
)

// newEcho returns an echo.New() with ext as its IPExtractor.
func newEcho(ext echo.IPExtractor) *echo.Echo {
	e := echo.New()
	e.IPExtractor = ext
	return e
}

// keyOf runs key on a context of e for a request from peer carrying
// headers, as echo would build it for a route of e.
func keyOf(e *echo.Echo, key func(echo.Context) (string, error), peer string, headers map[string]string) (string, error) {
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	r.RemoteAddr = peer
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return key(e.NewContext(r, httptest.NewRecorder()))
}

// RealIP refuses a nil Echo and one without an IPExtractor, with an error
// that names the fix.
func TestRealIPRefusesUnsafeEcho(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    *echo.Echo
		want []string
	}{
		{"nil Echo", nil, []string{"nil *echo.Echo", "IPExtractor"}},
		{"no IPExtractor", echo.New(), []string{
			"IPExtractor is nil", "X-Forwarded-For", "echo.ExtractIPDirect()",
			"echo.ExtractIPFromXFFHeader(echo.TrustIPRange(", "echo.ExtractIPFromRealIPHeader(",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := echoadapter.RealIP(tc.e)
			require.Error(t, err, "RealIP")
			require.Nil(t, key, "RealIP's key")
			assert.Regexp(t, "^echoadapter: RealIP: ", err.Error())
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// The key is what the configured IPExtractor trusts, normalised.
func TestRealIPKey(t *testing.T) {
	_, proxies, err := net.ParseCIDR("192.0.2.0/24")
	require.NoError(t, err)
	spoofed := map[string]string{"X-Forwarded-For": "198.51.100.9", "X-Real-IP": "198.51.100.10"}
	xff := map[string]string{"X-Forwarded-For": "198.51.100.9"}
	cases := []struct {
		name    string
		ext     echo.IPExtractor
		peer    string
		headers map[string]string
		want    string
	}{
		{"direct, spoofed headers ignored", echo.ExtractIPDirect(), "203.0.113.7:1234", spoofed, "203.0.113.7"},
		{"direct IPv6", echo.ExtractIPDirect(), "[2001:db8::7]:1234", spoofed, "2001:db8::7"},
		{"direct IPv4-mapped", echo.ExtractIPDirect(), "[::ffff:203.0.113.7]:1234", nil, "203.0.113.7"},
		// ExtractIPFromXFFHeader trusts loopback, link-local and private
		// peers by default.
		{"XFF from a private proxy", echo.ExtractIPFromXFFHeader(), "10.1.2.3:1234", xff, "198.51.100.9"},
		{"XFF from a stranger", echo.ExtractIPFromXFFHeader(), "203.0.113.7:1234", xff, "203.0.113.7"},
		{"XFF from a listed proxy", echo.ExtractIPFromXFFHeader(echo.TrustIPRange(proxies)), "192.0.2.5:1234",
			map[string]string{"X-Forwarded-For": "203.0.113.66, 198.51.100.9, 10.9.9.9"}, "198.51.100.9"},
		{"X-Real-IP from a private proxy", echo.ExtractIPFromRealIPHeader(), "10.1.2.3:1234", spoofed, "198.51.100.10"},
		{"X-Real-IP from a stranger", echo.ExtractIPFromRealIPHeader(), "203.0.113.7:1234", spoofed, "203.0.113.7"},
		{"X-Real-IP IPv4-mapped", echo.ExtractIPFromRealIPHeader(), "10.1.2.3:1234",
			map[string]string{"X-Real-IP": "::ffff:198.51.100.10"}, "198.51.100.10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEcho(tc.ext)
			key, err := echoadapter.RealIP(e)
			require.NoError(t, err)
			got, err := keyOf(e, key, tc.peer, tc.headers)
			require.NoError(t, err)
			require.Equal(t, tc.want, got, "key")
		})
	}
}

// Values that are no usable address are a *keyfuncs.Error answered 400.
func TestRealIPKeyErrors(t *testing.T) {
	// An extractor returning its header verbatim stands for a custom one.
	header := func(r *http.Request) string { return r.Header.Get("X-Client") }
	for _, tc := range []struct {
		name, value, reason string
	}{
		{"empty", "", "missing"},
		{"not an address", "not-an-ip", "not an IP address"},
		{"zone", "fe80::1%eth0", "not an IP address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEcho(header)
			key, err := echoadapter.RealIP(e)
			require.NoError(t, err)
			got, err := keyOf(e, key, "203.0.113.7:1234", map[string]string{"X-Client": tc.value})
			var ke *keyfuncs.Error
			require.ErrorAs(t, err, &ke, "key %q", got)
			require.Equal(t, http.StatusBadRequest, ke.Status, "the *keyfuncs.Error's status")
			require.Equal(t, tc.reason, ke.Reason, "the *keyfuncs.Error's reason")
		})
	}
}

// Through the middleware: one peer forging a new X-Forwarded-For per
// request is still one client, while distinct clients behind a trusted
// proxy stay distinct.
func TestRealIPMiddleware(t *testing.T) {
	ok := func(c echo.Context) error { return c.NoContent(http.StatusOK) }
	serve := func(t *testing.T, ext echo.IPExtractor, peer string, want ...int) {
		t.Helper()
		g, _ := submitGuard(t)
		e := newEcho(ext)
		key, err := echoadapter.RealIP(e)
		require.NoError(t, err)
		e.POST("/submit", ok, echoadapter.Middleware(g, key))
		for i, code := range want {
			r := adaptertest.Submit("")
			r.RemoteAddr = peer
			r.Header.Set("X-Forwarded-For", []string{"198.51.100.1", "198.51.100.2"}[i])
			adaptertest.Status(t, adaptertest.Serve(e, r), code)
		}
	}
	t.Run("spoofing direct client", func(t *testing.T) {
		serve(t, echo.ExtractIPDirect(), "203.0.113.7:1234", http.StatusOK, http.StatusTooManyRequests)
	})
	t.Run("spoofing client outside the proxies", func(t *testing.T) {
		serve(t, echo.ExtractIPFromXFFHeader(), "203.0.113.7:1234", http.StatusOK, http.StatusTooManyRequests)
	})
	t.Run("two clients behind a trusted proxy", func(t *testing.T) {
		serve(t, echo.ExtractIPFromXFFHeader(), "10.1.2.3:1234", http.StatusOK, http.StatusOK)
	})
}
