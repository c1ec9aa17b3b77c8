package keyfuncs

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRemoteIP(t *testing.T) {
	tests := []struct {
		name, remote string
		c            IPConfig
		want         string
	}{
		{"ipv4 with port", "192.0.2.1:1234", IPConfig{}, "192.0.2.1"},
		{"ipv4 bare", "192.0.2.1", IPConfig{}, "192.0.2.1"},
		{"ipv6 with port", "[2001:db8::1]:443", IPConfig{}, "2001:db8::1"},
		{"ipv6 bare", "2001:db8::1", IPConfig{}, "2001:db8::1"},
		{"ipv6 bracketed no port", "[2001:db8::1]", IPConfig{}, "2001:db8::1"},
		{"ipv6 non-canonical", "[2001:DB8:0:0:0:0:0:1]:1", IPConfig{}, "2001:db8::1"},
		{"ipv6 zone dropped", "[fe80::1%eth0]:80", IPConfig{}, "fe80::1"},
		{"mapped ipv4 unmapped", "[::ffff:192.0.2.1]:80", IPConfig{}, "192.0.2.1"},
		{"mapped ipv4 bare", "::ffff:192.0.2.1", IPConfig{}, "192.0.2.1"},
		{"group /64", "[2001:db8:1:2:3:4:5:6]:80", IPConfig{IPv6Prefix: 64}, "2001:db8:1:2::/64"},
		{"group /48", "[2001:db8:1:2:3:4:5:6]:80", IPConfig{IPv6Prefix: 48}, "2001:db8:1::/48"},
		{"prefix 0 is the address", "[2001:db8::1]:80", IPConfig{}, "2001:db8::1"},
		{"group /128 is the address", "[2001:db8::1]:80", IPConfig{IPv6Prefix: 128}, "2001:db8::1"},
		{"group leaves ipv4 alone", "192.0.2.1:80", IPConfig{IPv6Prefix: 64}, "192.0.2.1"},
		{"group leaves mapped ipv4 alone", "[::ffff:192.0.2.1]:80", IPConfig{IPv6Prefix: 64}, "192.0.2.1"},
		{"obfuscated port", "192.0.2.1:_p1", IPConfig{}, "192.0.2.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RemoteIP(tt.c)(req(tt.remote))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRemoteIPSameClientSameKey(t *testing.T) {
	f := RemoteIP(IPConfig{IPv6Prefix: 64})
	key := func(remote string) string {
		t.Helper()
		k, err := f(req(remote))
		require.NoError(t, err)
		return k
	}
	a := key("[2001:db8:1:2::a]:1")
	assert.Equal(t, a, key("[2001:db8:1:2:ffff::b%en0]:2"), "one /64")
	assert.NotEqual(t, a, key("[2001:db8:1:3::a]:1"), "another /64")
	assert.Equal(t, key("1.2.3.4:1"), key("[::ffff:1.2.3.4]:9"), "IPv4 and IPv4-mapped")
}

func TestRemoteIPInvalid(t *testing.T) {
	for _, remote := range []string{
		"", "@", "unix", "localhost:80", "01.2.3.4:80", "1.2.3:80", "[1.2.3.4]x", "1.2.3.4:80:90",
		"[]:80", "[", "]", "1.2.3.4 :80", "\x00\xff:1", "2001:db8::1::2",
		"1.2.3.4:", "[1.2.3.4]:80", "[2001:db8::1]:", "[2001:db8::1]80", "1.2.3.4:8 0", "[2001:db8::1:80",
	} {
		_, err := RemoteIP()(req(remote))
		wantErr(t, err, http.StatusBadRequest, "remote address", remote)
	}
}

func TestRemoteIPPanics(t *testing.T) {
	assert.Panics(t, func() { RemoteIP(IPConfig{IPv6Prefix: -1}) })
	assert.Panics(t, func() { RemoteIP(IPConfig{IPv6Prefix: 129}) })
	assert.Panics(t, func() { RemoteIP(IPConfig{}, IPConfig{}) })
	assert.Panics(t, func() { RemoteIP(IPConfig{TrustedProxies: []netip.Prefix{{}}}) })
}

// TestCanonicalIPv4Host checks RemoteIP's fast path against the general
// one: wherever it answers, the general path gives the same identity, and
// it misses no canonical IPv4 peer.
func TestCanonicalIPv4Host(t *testing.T) {
	for _, s := range []string{
		"192.0.2.1:1234", "192.0.2.1", "0.0.0.0:0", "255.255.255.255:65535", "10.0.0.1:_obf",
		"256.0.0.1:1", "01.2.3.4:1", "1.2.3:1", "1.2.3.4.5:1", "1..3.4:1", ".1.2.3:1", "1.2.3.4.:1",
		"1.2.3.4:", "1.2.3.4:a:b", "1.2.3.4:12/", "[::1]:1", "::ffff:1.2.3.4", "1.2.3.4%eth0:1", "", ":1", "1.2.3.04:1",
	} {
		host, fast := canonicalIPv4Host(s)
		gh, addr, ok := parseHostPort(s)
		if fast {
			require.True(t, ok, "%q: fast path %q, general path fails", s, host)
			require.Equal(t, addr.String(), host, s)
			require.Equal(t, gh, host, s)
		} else {
			missed := ok && addr.Is4() && !strings.Contains(gh, ":") && strings.Count(s, ":") <= 1
			assert.False(t, missed, "%q: canonical IPv4 %q missed by the fast path", s, gh)
		}
	}
}
