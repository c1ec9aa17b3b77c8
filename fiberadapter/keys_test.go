package fiberadapter_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
)

// keyOf runs key on the fiber.Ctx of r, served by a fiber app on route.
func keyOf(t *testing.T, route string, key func(fiber.Ctx) (string, error), r *http.Request) (string, error) {
	t.Helper()
	var id string
	var err error
	app := fiber.New()
	app.All(route, func(c fiber.Ctx) error {
		c.Locals("user", c.Get("X-Auth"))
		return c.Next()
	}, func(c fiber.Ctx) error {
		id, err = key(c)
		return nil
	})
	adaptertest.Status(t, adaptertest.Serve(adaptor.FiberApp(app), r), http.StatusOK)
	return id, err
}

// from returns a request to path from peer with the header fields h.
func from(path, peer string, h ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(h); i += 2 {
		r.Header.Add(h[i], h[i+1])
	}
	return r
}

// RemoteIP gives the identity keyfuncs.RemoteIP gives the same request,
// with and without trusted proxies: the three other adapters' keys.
func TestRemoteIPAsKeyfuncs(t *testing.T) {
	proxies := keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	forwarded := proxies
	forwarded.Forwarded = true
	cases := []struct {
		name string
		cfg  []keyfuncs.IPConfig
		req  *http.Request
		want string
	}{
		{"IPv4", nil, from("/", "203.0.113.7:1234"), "203.0.113.7"},
		{"spoofed headers ignored", nil, from("/", "203.0.113.7:1234", "X-Forwarded-For", "198.51.100.9"), "203.0.113.7"},
		{"IPv6", nil, from("/", "[2001:db8::7]:1234"), "2001:db8::7"},
		{"IPv4-mapped", nil, from("/", "[::ffff:203.0.113.7]:1234"), "203.0.113.7"},
		{"zone dropped", nil, from("/", "[fe80::1%eth0]:1234"), "fe80::1"},
		{"IPv6 by /64", []keyfuncs.IPConfig{{IPv6Prefix: 64}}, from("/", "[2001:db8::7]:1234"), "2001:db8::/64"},
		{"stranger with proxies", []keyfuncs.IPConfig{proxies}, from("/", "203.0.113.7:1234", "X-Forwarded-For", "198.51.100.9"), "203.0.113.7"},
		{"trusted proxy, right to left", []keyfuncs.IPConfig{proxies}, from("/", "10.1.2.3:1234",
			"X-Forwarded-For", "192.0.2.66, 198.51.100.9, 10.9.9.9"), "198.51.100.9"},
		{"Forwarded", []keyfuncs.IPConfig{forwarded}, from("/", "10.1.2.3:1234",
			"Forwarded", `for=192.0.2.66, for="[2001:db8::9]:80"`, "X-Forwarded-For", "198.51.100.9"), "2001:db8::9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyOf(t, "/", fiberadapter.RemoteIP(tc.cfg...), tc.req)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			want, err := keyOf(t, "/", fiberadapter.Request(keyfuncs.RemoteIP(tc.cfg...)), tc.req)
			require.NoError(t, err)
			require.Equal(t, want, got, "keyfuncs.RemoteIP's identity")
		})
	}
	t.Run("unknown client behind a proxy", func(t *testing.T) {
		_, err := keyOf(t, "/", fiberadapter.RemoteIP(proxies), from("/", "10.1.2.3:1234", "X-Forwarded-For", "unknown"))
		var ke *keyfuncs.Error
		require.ErrorAs(t, err, &ke)
		require.Equal(t, http.StatusBadRequest, ke.HTTPStatus())
	})
	require.Panics(t, func() { fiberadapter.RemoteIP(keyfuncs.IPConfig{IPv6Prefix: 129}) }, "as keyfuncs.RemoteIP")
}

// A peer without an IP address (a Unix socket) is refused, never keyed on
// one shared address.
func TestRemoteIPWithoutPeer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "fiber.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	g, _ := submitGuard(t)
	app := fiber.New()
	app.Post("/submit", fiberadapter.Middleware(g, fiberadapter.RemoteIP()), func(c fiber.Ctx) error { return nil })
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	res, err := client.Post("http://fiber/submit", "text/plain", nil)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "body %q", body)
	require.Contains(t, string(body), "remote address")
	client.CloseIdleConnections()
	require.NoError(t, app.Shutdown())
	require.NoError(t, <-served)
}

// The native keys give keyfuncs' identities, and its errors.
func TestKeys(t *testing.T) {
	withCookie := from("/jobs/7/run", "192.0.2.1:1", "X-User-ID", "42", "X-Auth", "alice")
	withCookie.AddCookie(&http.Cookie{Name: "demo_user", Value: "b7"})
	bare := from("/jobs/7/run", "192.0.2.1:1")
	cases := []struct {
		name   string
		key    func(fiber.Ctx) (string, error)
		like   keyfuncs.Func // nil: no keyfuncs counterpart
		want   string
		source string // of the error for bare
	}{
		{"Header", fiberadapter.Header("x-user-id"), keyfuncs.Header("X-User-ID"), "42", `header "x-user-id"`},
		{"Cookie", fiberadapter.Cookie("demo_user"), keyfuncs.Cookie("demo_user"), "b7", `cookie "demo_user"`},
		{"Param", fiberadapter.Param("id"), nil, "7", ""},
		{"Route", fiberadapter.Route(), nil, "/jobs/:id/run", ""},
		{"Value", fiberadapter.Value("user"), nil, "alice", `fiber local "user"`},
		{"FirstOf", keyfuncs.FirstOf(fiberadapter.Header("X-User-ID"), fiberadapter.Cookie("demo_user"), fiberadapter.RemoteIP()),
			keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.Cookie("demo_user"), keyfuncs.RemoteIP()), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyOf(t, "/jobs/:id/run", tc.key, withCookie)
			require.NoError(t, err)
			if tc.like != nil {
				want, err := tc.like(withCookie)
				require.NoError(t, err)
				require.Equal(t, want, got, "keyfuncs' identity")
			}
			if tc.want != "" {
				require.Equal(t, tc.want, got)
			}
			if tc.source != "" {
				_, err := keyOf(t, "/jobs/:id/run", tc.key, bare)
				var ke *keyfuncs.Error
				require.ErrorAs(t, err, &ke)
				require.Equal(t, keyfuncs.Error{Status: http.StatusBadRequest, Source: tc.source, Reason: "missing"}, *ke)
			}
		})
	}
}
