package keyfuncs

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
)

func TestCookieValues(t *testing.T) {
	tests := []struct {
		name, header, want string
	}{
		{"only cookie", "demo_user=7QX2", "7QX2"},
		{"among others", "theme=dark; demo_user=abc; lang=en", "abc"},
		{"first of two", "demo_user=first; demo_user=second", "first"},
		{"separators kept", "demo_user=a:b{c}%d", "a:b{c}%d"},
		{"quotes removed", `demo_user="q1"`, "q1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Cookie("demo_user")(req("1.2.3.4:1", "Cookie", tt.header))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	// Several Cookie lines (HTTP/2 may split them) are all searched.
	got, err := Cookie("demo_user")(req("1.2.3.4:1", "Cookie", "a=1", "Cookie", "demo_user=on-line-2"))
	require.NoError(t, err)
	assert.Equal(t, "on-line-2", got)
}

// A missing, empty or malformed cookie is a 400 naming the cookie and
// nothing the client sent; it is one shared *Error per Cookie func.
func TestCookieMissing(t *testing.T) {
	f := Cookie("demo_user")
	var first error
	for _, c := range []string{"", "a=1", "session", "other=secret-1", "demo_user=", "Demo_User=secret-2",
		"demo_user=bad\"secret-3", "demo_user=bad\x01secret-4", "demo_users=secret-5"} {
		r := req("1.2.3.4:1")
		if c != "" {
			r.Header.Set("Cookie", c)
		}
		got, err := f(r)
		assert.Empty(t, got, "Cookie %q", c)
		wantErr(t, err, http.StatusBadRequest, `cookie "demo_user"`, "secret")
		require.EqualError(t, err, `keyfuncs: cookie "demo_user": missing`)
		if first == nil {
			first = err
		}
		require.Same(t, first, err, "Cookie %q: a new error value, want the shared one", c)
	}
}

// A long cookie is taken whole, and the stored key stays short: storekit.Key
// hashes a long identity, as for a header.
func TestCookieLongValueGivesBoundedKey(t *testing.T) {
	big := strings.Repeat("c", 64<<10)
	got, err := Cookie("demo_user")(req("1.2.3.4:1", "Cookie", "demo_user="+big))
	require.NoError(t, err)
	require.Equal(t, big, got)
	assert.LessOrEqual(t, len(storekit.Key("throttle", "submit", got)), 200)
}

// The examples' chain: X-User-ID, else the cookie, else the client IP. The
// three sources never share an identity, even for equal values.
func TestCookieInFirstOf(t *testing.T) {
	user := FirstOf(Header("X-User-ID"), Cookie("demo_user"), RemoteIP())
	id := func(r *http.Request) string {
		t.Helper()
		v, err := user(r)
		require.NoError(t, err)
		return v
	}
	byHeader := id(req("192.0.2.1:1", "X-User-ID", "192.0.2.1", "Cookie", "demo_user=192.0.2.1"))
	byCookie := id(req("192.0.2.1:1", "Cookie", "demo_user=192.0.2.1"))
	byIP := id(req("192.0.2.1:1"))
	assert.NotEqual(t, byHeader, byCookie)
	assert.NotEqual(t, byCookie, byIP)
	assert.NotEqual(t, byHeader, byIP)
	assert.Equal(t, byCookie, id(req("198.51.100.7:1", "Cookie", "demo_user=192.0.2.1")), "the cookie's identity depends on the peer")
	assert.Equal(t, byIP, id(req("192.0.2.1:1", "Cookie", "demo_user=")), "an empty cookie did not fall through to the IP")
	_, err := user(req("not-an-address"))
	wantErr(t, err, http.StatusBadRequest, "remote address")
}
