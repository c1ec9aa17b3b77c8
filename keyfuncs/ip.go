package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// IPOption tunes RemoteIP and ForwardedIP.
type IPOption func(*ipConfig)

type ipConfig struct {
	v6bits    int  // prefix length IPv6 addresses are grouped by; 128 = none
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

// GroupIPv6 keys IPv6 clients by /bits network, such as "2001:db8:1:2::/64",
// as a host usually holds a /64 and can use a fresh address per request.
func GroupIPv6(bits int) IPOption {
	if bits < 0 || bits > 128 {
		panic(fmt.Sprintf("keyfuncs: GroupIPv6(%d): bits must be within 0..128", bits))
	}
	return func(c *ipConfig) { c.v6bits = bits }
}

var errBadRemote = badRequest("remote address", "not an IP address")

// RemoteIP keys on the peer's address, written so that a client has one
// identity: no port or zone, IPv4-mapped as IPv4, IPv6 in RFC 5952 form.
func RemoteIP(opts ...IPOption) Func {
	c := newIPConfig(opts)
	return func(r *http.Request) (string, error) {
		if host, ok := canonicalIPv4Host(r.RemoteAddr); ok {
			return host, nil
		}
		host, addr, ok := parseHostPort(r.RemoteAddr)
		if !ok {
			return "", errBadRemote
		}
		return c.format(host, addr), nil
	}
}

// parseHostPort accepts "ip", "ip:port", "[ip]" and "[ip]:port", the port
// unread as RFC 7239 lets proxies obfuscate it, and unmaps the address.
func parseHostPort(s string) (string, netip.Addr, bool) {
	host, ok := s, true
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 || end+1 < len(s) && !isPort(s[end+1:]) {
			return "", netip.Addr{}, false
		}
		host = s[1:end]
		ok = strings.Contains(host, ":") // only IPv6 goes in brackets
	} else if i := strings.IndexByte(s, ':'); i >= 0 && !strings.Contains(s[i+1:], ":") {
		host, ok = s[:i], isPort(s[i:]) // one colon: IPv4 and a port
	}
	a, err := netip.ParseAddr(host)
	if !ok || err != nil {
		return "", netip.Addr{}, false
	}
	return host, a.WithZone("").Unmap(), true
}

func isPort(s string) bool {
	if len(s) < 2 || s[0] != ':' {
		return false
	}
	for _, c := range []byte(s[1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// format writes a as an identity; host is its text if that is canonical.
func (c ipConfig) format(host string, a netip.Addr) string {
	if a.Is4() {
		if !strings.Contains(host, ":") {
			return host
		}
		return a.String()
	}
	var buf [64]byte
	if c.v6bits < 128 {
		p, _ := a.Prefix(c.v6bits) // cannot fail: a is IPv6, bits within 0..128
		return string(p.AppendTo(buf[:0]))
	}
	return string(a.AppendTo(buf[:0]))
}

// canonicalIPv4Host returns the host of s if it is IPv4 as netip writes it,
// with a port parseHostPort accepts: the usual peer, without netip's parsing.
func canonicalIPv4Host(s string) (string, bool) {
	host, _, hasPort := strings.Cut(s, ":")
	if hasPort && !isPort(s[len(host):]) {
		return "", false
	}
	fields, n, digits := 0, 0, 0
	for i := range len(host) {
		switch c := host[i]; {
		case c == '.' && digits > 0 && fields < 3:
			fields, n, digits = fields+1, 0, 0
		case '0' <= c && c <= '9' && (digits == 0 || n > 0) && n*10+int(c-'0') <= 255:
			n, digits = n*10+int(c-'0'), digits+1
		default:
			return "", false
		}
	}
	return host, fields == 3 && digits > 0
}
