package keyfuncs

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRemoteIPForwardedXFF(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8", "192.0.2.10", "2001:db8:ffff::/48")
	tests := []struct {
		name   string
		remote string
		hdr    []string
		c      IPConfig
		want   string
	}{
		{"untrusted peer, no header", "203.0.113.5:1", nil, IPConfig{}, "203.0.113.5"},
		{"untrusted peer, spoofed header ignored", "203.0.113.5:1",
			[]string{"X-Forwarded-For", "1.1.1.1"}, IPConfig{}, "203.0.113.5"},
		{"untrusted peer, spoofed chain ignored", "203.0.113.5:1",
			[]string{"X-Forwarded-For", "1.1.1.1, 10.0.0.1"}, IPConfig{}, "203.0.113.5"},
		{"untrusted peer, junk header ignored", "203.0.113.5:1",
			[]string{"X-Forwarded-For", "\x00garbage,,,["}, IPConfig{}, "203.0.113.5"},
		{"trusted peer, no header: the peer", "10.0.0.2:1", nil, IPConfig{}, "10.0.0.2"},
		{"trusted peer, one hop", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "198.51.100.7"}, IPConfig{}, "198.51.100.7"},
		{"client prepends a fake address", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "6.6.6.6, 198.51.100.7"}, IPConfig{}, "198.51.100.7"},
		{"right to left through trusted hops", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "6.6.6.6, 198.51.100.7, 192.0.2.10, 10.1.2.3"}, IPConfig{}, "198.51.100.7"},
		{"several header lines", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "6.6.6.6", "X-Forwarded-For", "198.51.100.7, 10.9.9.9", "X-Forwarded-For", "10.1.1.1"}, IPConfig{}, "198.51.100.7"},
		{"all trusted: leftmost", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "10.0.0.9, 192.0.2.10"}, IPConfig{}, "10.0.0.9"},
		{"spaces and empty elements", "10.0.0.2:1",
			[]string{"X-Forwarded-For", " ,\t198.51.100.7 , ,10.0.0.3,"}, IPConfig{}, "198.51.100.7"},
		{"only empty elements: the peer", "10.0.0.2:1",
			[]string{"X-Forwarded-For", " , ,"}, IPConfig{}, "10.0.0.2"},
		{"port on a hop", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "198.51.100.7:5555"}, IPConfig{}, "198.51.100.7"},
		{"ipv6 hop", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "2001:DB8::7"}, IPConfig{}, "2001:db8::7"},
		{"bracketed ipv6 hop with port", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "[2001:db8::7]:443"}, IPConfig{}, "2001:db8::7"},
		{"mapped ipv4 hop unmapped and trusted", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "198.51.100.7, ::ffff:10.3.3.3"}, IPConfig{}, "198.51.100.7"},
		{"trusted ipv6 proxy", "[2001:db8:ffff::1]:1",
			[]string{"X-Forwarded-For", "2001:db8:1:2::99"}, IPConfig{IPv6Prefix: 64}, "2001:db8:1:2::/64"},
		{"mapped peer trusted", "[::ffff:10.0.0.2]:1",
			[]string{"X-Forwarded-For", "198.51.100.7"}, IPConfig{}, "198.51.100.7"},
		{"junk left of the client is never read", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "not-an-ip, [[[, 198.51.100.7"}, IPConfig{}, "198.51.100.7"},
		{"Forwarded ignored without IPConfig.Forwarded", "10.0.0.2:1",
			[]string{"Forwarded", "for=6.6.6.6"}, IPConfig{}, "10.0.0.2"},
		{"X-Forwarded-For ignored with IPConfig.Forwarded", "10.0.0.2:1",
			[]string{"X-Forwarded-For", "6.6.6.6"}, IPConfig{Forwarded: true}, "10.0.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.TrustedProxies = trusted
			got, err := RemoteIP(tt.c)(req(tt.remote, tt.hdr...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRemoteIPForwardedRFC7239(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8", "2001:db8:ffff::/48")
	tests := []struct {
		name string
		hdr  []string
		want string
	}{
		{"rfc example", []string{"Forwarded", `for="_gazonk", For="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"params and case", []string{"Forwarded", `FOR=192.0.2.60;proto=http;by=203.0.113.43`}, "192.0.2.60"},
		{"quoted ipv4 with port", []string{"Forwarded", `for="192.0.2.43:47011"`}, "192.0.2.43"},
		{"right to left", []string{"Forwarded", `for=6.6.6.6, for=192.0.2.43, for=10.0.0.5`}, "192.0.2.43"},
		{"several lines", []string{"Forwarded", `for=6.6.6.6`, "Forwarded", `for=192.0.2.43;proto=https`, "Forwarded", `for="[2001:db8:ffff::9]"`}, "192.0.2.43"},
		{"all trusted: leftmost", []string{"Forwarded", `for=10.1.1.1, for=10.2.2.2`}, "10.1.1.1"},
		{"no header: the peer", nil, "10.0.0.2"},
		{"only empty elements: the peer", []string{"Forwarded", ` , ,`}, "10.0.0.2"},
		{"unquoted ipv6 leniency", []string{"Forwarded", `for=[2001:db8::5]:80`}, "2001:db8::5"},
		{"escaped quoted value", []string{"Forwarded", `for="\192.0.2.44"`}, "192.0.2.44"},
		{"spaces and empty elements", []string{"Forwarded", ` , for=192.0.2.45 ; proto=https ,, `}, "192.0.2.45"},
		{"empty pairs", []string{"Forwarded", `;;for=192.0.2.48;;`}, "192.0.2.48"},
		{"comma inside quotes", []string{"Forwarded", `for=192.0.2.46;ext="a, for=6.6.6.6"`}, "192.0.2.46"},
		{"obfuscated left of the client is fine", []string{"Forwarded", `for=_hidden, for=192.0.2.47`}, "192.0.2.47"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RemoteIP(IPConfig{TrustedProxies: trusted, Forwarded: true})(req("10.0.0.2:1", tt.hdr...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRemoteIPForwardedErrors(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	xff := []struct{ name, v string }{
		{"unparsable hop", "198.51.100.7, not-an-ip"},
		{"unparsable rightmost", "junk"},
		{"hostname", "example.com"},
		{"binary", "\x00\x01\xff"},
		{"separator soup", "1.2.3.4;5.6.7.8"},
		{"too many hops", strings.Repeat("10.0.0.1,", maxForwardedHops) + "10.0.0.1"},
		{"too large", strings.Repeat(" ", maxForwardedBytes) + "1.2.3.4"},
	}
	for _, tt := range xff {
		t.Run("xff "+tt.name, func(t *testing.T) {
			_, err := RemoteIP(IPConfig{TrustedProxies: trusted})(req("10.0.0.2:1", "X-Forwarded-For", tt.v))
			wantErr(t, err, http.StatusBadRequest, `header "X-Forwarded-For"`, strings.TrimSpace(tt.v))
		})
	}
	fwd := []struct{ name, v string }{
		{"obfuscated client", `for=_hidden`},
		{"unknown client", `for=unknown`},
		{"unknown client quoted, any case", `for="UnKnown"`},
		{"no for", `proto=https;by=10.0.0.1`},
		{"only a semicolon", `;`},
		{"unterminated quote", `for="192.0.2.1`},
		{"unterminated after a backslash", `for="192.0.2.1\`},
		{"junk after value", `for="192.0.2.1"x`},
		{"junk after a token", `for=1.2.3.4 x`},
		{"client quote swallowing the proxy's element", `for="x, for="[2001:db8::1]"`},
		{"duplicate for", `for=1.2.3.4;for=5.6.7.8`},
		{"duplicate for, any case", `for=1.2.3.4;FOR=5.6.7.8`},
		{"missing value", `for=`},
		{"space around =", `for = 1.2.3.4`},
		{"missing name", `=1.2.3.4`},
		{"no equals", `for`},
		{"unparsable node", `for="1.2.3.4.5"`},
		{"binary", "for=\x00"},
		{"too many hops", strings.Repeat("for=10.0.0.1,", maxForwardedHops+1)},
		{"too large", strings.Repeat(",", maxForwardedBytes+1)},
	}
	for _, tt := range fwd {
		t.Run("forwarded "+tt.name, func(t *testing.T) {
			_, err := RemoteIP(IPConfig{TrustedProxies: trusted, Forwarded: true})(req("10.0.0.2:1", "Forwarded", tt.v))
			wantErr(t, err, http.StatusBadRequest, `header "Forwarded"`, "1.2.3.4", "192.0.2.1", "_hidden")
		})
	}
	half := strings.Repeat("10.0.0.1,", maxForwardedHops/2) + "10.0.0.1"
	_, err := RemoteIP(IPConfig{TrustedProxies: trusted})(req("10.0.0.2:1", "X-Forwarded-For", half, "X-Forwarded-For", half))
	wantErr(t, err, http.StatusBadRequest, `header "X-Forwarded-For"`)
	_, err = RemoteIP(IPConfig{TrustedProxies: trusted})(req("nope", "X-Forwarded-For", "1.2.3.4"))
	wantErr(t, err, http.StatusBadRequest, "remote address", "nope")
}

func TestRemoteIPForwardedMegabyteHeader(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	big := strings.Repeat("10.0.0.1, ", 100_000) // ~1 MB, Go's default header limit
	for _, name := range []string{"X-Forwarded-For", "Forwarded"} {
		c := IPConfig{TrustedProxies: trusted, Forwarded: name == "Forwarded"}
		_, err := RemoteIP(c)(req("10.0.0.2:1", name, big+"198.51.100.7"))
		wantErr(t, err, http.StatusBadRequest, `header "`+name+`"`)
		// The same header from an untrusted peer is not even read.
		got, err := RemoteIP(c)(req("203.0.113.1:1", name, big))
		require.NoError(t, err)
		assert.Equal(t, "203.0.113.1", got)
	}
}

func TestRemoteIPForwardedAtLimits(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	v := strings.Repeat("10.0.0.1,", maxForwardedHops-1) + "10.0.0.1"
	got, err := RemoteIP(IPConfig{TrustedProxies: trusted})(req("10.0.0.2:1", "X-Forwarded-For", v))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1", got)

	fv := strings.Repeat("for=10.0.0.1,", maxForwardedHops)
	got, err = RemoteIP(IPConfig{TrustedProxies: trusted, Forwarded: true})(req("10.0.0.2:1", "Forwarded", fv))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1", got)
}

func TestRemoteIPNoTrusted(t *testing.T) {
	got, err := RemoteIP(IPConfig{Forwarded: true})(req("10.0.0.2:1", "Forwarded", "for=1.1.1.1"))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.2", got)
	got, err = RemoteIP()(req("10.0.0.2:1", "X-Forwarded-For", "1.1.1.1"))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.2", got)
}

func TestRemoteIPForwardedMappedTrustedPrefix(t *testing.T) {
	// A trusted prefix written as IPv4-mapped IPv6 still matches IPv4 peers.
	// An unmasked prefix is masked.
	for _, p := range []string{"::ffff:10.0.0.0/104", "10.1.2.3/8", "::ffff:10.9.9.9/104"} {
		c := IPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix(p)}}
		got, err := RemoteIP(c)(req("10.0.0.2:1", "X-Forwarded-For", "198.51.100.7"))
		require.NoError(t, err)
		assert.Equal(t, "198.51.100.7", got, p)
	}
}
