package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// IPOption tunes RemoteIP and ForwardedIP: GroupIPv6 and FromForwarded.
// Without options each address is its own identity and ForwardedIP reads
// X-Forwarded-For, the header every common proxy and load balancer writes.
type IPOption func(*ipConfig)

type ipConfig struct {
	v6bits    int  // prefix length IPv6 addresses are grouped by; 128 = no grouping
	forwarded bool // read RFC 7239 Forwarded instead of X-Forwarded-For
}

func newIPConfig(opts []IPOption) ipConfig {
	c := ipConfig{v6bits: 128}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// GroupIPv6 makes IPv6 clients share one identity per /bits network, written
// as a prefix such as "2001:db8:1:2::/64". A single user or host usually holds
// a whole /64 and can pick a fresh address in it for every request, so keying
// on the full address would let it slip past any limit; 64 is the usual
// choice. IPv4 addresses (including IPv4-mapped IPv6 ones) are not grouped.
//
// Without this option every IPv6 address is its own identity. GroupIPv6
// panics if bits is outside 0..128: that is a programming error, found at
// start-up rather than on every request.
func GroupIPv6(bits int) IPOption {
	if bits < 0 || bits > 128 {
		panic(fmt.Sprintf("keyfuncs: GroupIPv6(%d): bits must be within 0..128", bits))
	}
	return func(c *ipConfig) { c.v6bits = bits }
}

var remoteSource = "remote address"

// RemoteIP keys on the address of the direct peer, the host part of
// r.RemoteAddr. It is normalised so that one client has one identity: the
// port and any IPv6 zone are dropped, an IPv4-mapped IPv6 address
// (::ffff:192.0.2.1) is written as plain IPv4 (192.0.2.1), and IPv6 is
// written in its canonical RFC 5952 form (or grouped, see GroupIPv6).
//
// Behind a reverse proxy or load balancer the peer is the proxy, so every
// user would share its key: use ForwardedIP there. A RemoteAddr that is not an
// IP address (a Unix socket peer, a test that forgot to set it) gives a
// *Error with status 400, never a shared key.
func RemoteIP(opts ...IPOption) Func {
	c := newIPConfig(opts)
	return func(r *http.Request) (string, error) {
		if host, ok := canonicalIPv4Host(r.RemoteAddr); ok {
			return host, nil // what the general path below returns for it
		}
		host, addr, err := parseRemote(r.RemoteAddr)
		if err != nil {
			return "", err
		}
		return c.format(host, addr), nil
	}
}

// parseRemote parses r.RemoteAddr ("ip:port", "[ipv6]:port", or a bare IP)
// into a normalised address. host is the textual address as found, used to
// avoid an allocation when it is already canonical.
func parseRemote(remote string) (host string, addr netip.Addr, err error) {
	host, addr, ok := parseHostPort(remote)
	if !ok {
		return "", netip.Addr{}, &Error{Status: http.StatusBadRequest, Source: remoteSource, Reason: "not an IP address"}
	}
	return host, addr, nil
}

// parseHostPort accepts "ip", "ip:port", "[ip]" and "[ip]:port", with an
// optional IPv6 zone, and returns the address unmapped and without zone,
// and the address text as found. It splits by hand rather than with
// net.SplitHostPort so that the common cases do not allocate an error.
// The port is not interpreted; it may be obfuscated as RFC 7239 allows
// ("_abc").
func parseHostPort(s string) (string, netip.Addr, bool) {
	host := s
	if len(s) > 0 && s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 || (end+1 < len(s) && !isPort(s, end+1)) {
			return "", netip.Addr{}, false
		}
		host = s[1:end]
		if strings.IndexByte(host, ':') < 0 {
			return "", netip.Addr{}, false // only IPv6 goes in brackets
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 && strings.IndexByte(s[i+1:], ':') < 0 {
		// One colon: IPv4 with a port. Several: bare IPv6.
		if !isPort(s, i) {
			return "", netip.Addr{}, false
		}
		host = s[:i]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return "", netip.Addr{}, false
	}
	return host, normalise(a), true
}

// isPort reports whether s[i:] is ':' followed by a port: digits, or an
// RFC 7239 obfuscated port ("_" and letters, digits, '.', '_', '-').
func isPort(s string, i int) bool {
	if i+1 >= len(s) || s[i] != ':' {
		return false
	}
	for _, c := range []byte(s[i+1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// normalise drops the zone and unmaps IPv4-in-IPv6, so that the same client
// compares equal (and matches IPv4 trusted prefixes) however it is written.
func normalise(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// format writes a normalised address as an identity. host is the text the
// address was parsed from: a plain IPv4 address that netip accepted is
// already canonical (netip rejects leading zeros and short forms), so it is
// returned as is, without allocating.
func (c ipConfig) format(host string, a netip.Addr) string {
	if a.Is4() {
		if isPlainIPv4(host) {
			return host // canonical: see above
		}
		return a.String()
	}
	var buf [64]byte // the longest IPv6 text with "/128" is 43 bytes
	if c.v6bits < 128 {
		p, _ := a.Prefix(c.v6bits) // cannot fail: a is IPv6 and 0 <= bits <= 128
		return string(p.AppendTo(buf[:0]))
	}
	return string(a.AppendTo(buf[:0]))
}

// canonicalIPv4Host returns the host of s, "ip:port" or a bare "ip", when
// the ip is IPv4 written canonically (four decimal numbers from 0 to 255,
// without leading zeros) and the port is one parseHostPort accepts: the
// common peer address, whose identity is its host as it stands. It is
// RemoteIP's fast path, sparing it netip's parsing; anything else (IPv6, a
// zone, leading zeros, a bad port) reports false and takes the general
// path.
func canonicalIPv4Host(s string) (string, bool) {
	host := s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		if !isPort(s, i) {
			return "", false
		}
		host = s[:i]
	}
	fields, n, digits := 0, 0, 0
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case c == '.':
			if digits == 0 || fields == 3 {
				return "", false
			}
			fields, n, digits = fields+1, 0, 0
		case '0' <= c && c <= '9':
			if digits > 0 && n == 0 { // a leading zero
				return "", false
			}
			n, digits = n*10+int(c-'0'), digits+1
			if n > 255 {
				return "", false
			}
		default:
			return "", false
		}
	}
	return host, fields == 3 && digits > 0
}

// isPlainIPv4 reports whether s holds only digits and dots, that is, is
// written as IPv4 rather than as IPv4-mapped IPv6 or with a zone.
func isPlainIPv4(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
