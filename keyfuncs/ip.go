package keyfuncs

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// Proxy chains are a few hops: a longer header is refused, not walked.
const maxForwardedBytes, maxForwardedHops = 64 << 10, 100

// IPConfig tunes RemoteIP; the zero value keys on the peer's address.
type IPConfig struct {
	// TrustedProxies are your proxies' networks. From one of them, the
	// client is read from X-Forwarded-For right to left, past trusted
	// addresses; any other peer is the client, whatever it sent. A bad,
	// hidden or "unknown" client, or a header over 64 KiB, gives a 400.
	TrustedProxies []netip.Prefix
	// Forwarded reads RFC 7239 Forwarded instead of X-Forwarded-For:
	// never both, as proxies pass the other on untouched.
	Forwarded bool
	// IPv6Prefix, unless 0, keys IPv6 clients by network, such as /64,
	// as a host holds a /64 and can use a fresh address per request.
	IPv6Prefix int
}

type ipKey struct {
	trusted []netip.Prefix
	header  string // read from trusted proxies
	v6bits  int    // IPv6 addresses are grouped by; 128 = none
}

var errBadRemote = badRequest("remote address", "not an IP address")

// RemoteIP keys on the client's address, written so that a client has one
// identity: no port or zone, IPv4-mapped as IPv4, IPv6 in RFC 5952 form.
// It panics on more than one c, an invalid prefix or IPv6Prefix.
func RemoteIP(c ...IPConfig) Func {
	k := &ipKey{header: "X-Forwarded-For", v6bits: 128}
	switch {
	case len(c) > 1:
		panic("keyfuncs: RemoteIP takes at most one IPConfig")
	case len(c) == 0:
		return func(r *http.Request) (string, error) {
			if host, ok := canonicalIPv4Host(r.RemoteAddr); ok {
				return host, nil // the fast path of the usual peer, without a call
			}
			return k.key(r)
		}
	case c[0].IPv6Prefix < 0 || c[0].IPv6Prefix > 128:
		panic(fmt.Sprintf("keyfuncs: RemoteIP: IPv6Prefix %d is outside 0..128", c[0].IPv6Prefix))
	case c[0].Forwarded:
		k.header = "Forwarded"
	}
	k.v6bits = cmp.Or(c[0].IPv6Prefix, 128)
	for i, p := range c[0].TrustedProxies {
		if !p.IsValid() {
			panic(fmt.Sprintf("keyfuncs: RemoteIP: trusted prefix %d is not valid", i))
		} else if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		k.trusted = append(k.trusted, p.Masked())
	}
	return k.key
}

func (k *ipKey) key(r *http.Request) (string, error) {
	if len(k.trusted) == 0 {
		if host, ok := canonicalIPv4Host(r.RemoteAddr); ok {
			return host, nil
		}
	}
	host, addr, ok := parseHostPort(r.RemoteAddr)
	if !ok {
		return "", errBadRemote
	}
	if k.trusts(addr) {
		clientHost, client, err := k.client(r.Header[k.header])
		if err != nil {
			return "", err
		} else if client.IsValid() {
			host, addr = clientHost, client
		}
	}
	var buf [64]byte
	switch {
	case addr.Is4() && !strings.Contains(host, ":"):
		return host, nil // already as netip writes it
	case addr.Is6() && k.v6bits < 128:
		p, _ := addr.Prefix(k.v6bits) // cannot fail: bits within 0..128
		return string(p.AppendTo(buf[:0])), nil
	}
	return string(addr.AppendTo(buf[:0])), nil
}

func (k *ipKey) trusts(a netip.Addr) bool {
	return slices.ContainsFunc(k.trusted, func(p netip.Prefix) bool { return p.Contains(a) })
}

func (k *ipKey) refusal(reason string) error { return badRequest(`header "`+k.header+`"`, reason) }

// client returns the first untrusted address from the right, or the leftmost.
func (k *ipKey) client(lines []string) (host string, addr netip.Addr, err error) {
	var buf [16]string
	nodes, size, ok := buf[:0], 0, false
	for _, line := range lines {
		if size += len(line); size > maxForwardedBytes {
			return "", addr, k.refusal("too large")
		} else if nodes, ok = k.appendNodes(nodes, line); !ok {
			return "", addr, k.refusal("malformed")
		} else if len(nodes) > maxForwardedHops {
			return "", addr, k.refusal("too many hops")
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		switch host, addr, ok = parseHostPort(nodes[i]); {
		case !ok && (nodes[i] == "" || nodes[i][0] == '_' || strings.EqualFold(nodes[i], "unknown")):
			return "", addr, k.refusal("obfuscated or unknown client address")
		case !ok:
			return "", addr, k.refusal("unparsable address")
		case !k.trusts(addr):
			return host, addr, nil
		}
	}
	return host, addr, nil
}

// appendNodes appends the items of an X-Forwarded-For line, or the for=
// node of each Forwarded element (RFC 7239, 4), "" where it has none.
func (k *ipKey) appendNodes(nodes []string, line string) ([]string, bool) {
	for line != "" && len(nodes) <= maxForwardedHops {
		var elem string
		if k.header != "Forwarded" {
			elem, line, _ = strings.Cut(line, ",")
		} else {
			elem, line = cutQuoted(line, ',')
		}
		ok := true
		switch elem = strings.Trim(elem, " \t"); {
		case elem == "":
			continue
		case k.header == "Forwarded":
			elem, ok = forNode(elem)
		}
		if !ok {
			return nil, false
		}
		nodes = append(nodes, elem)
	}
	return nodes, true
}

// forNode returns the for= value of a Forwarded element, "" if it has none.
func forNode(elem string) (node string, ok bool) {
	found := false
	for elem != "" {
		var pair string
		pair, elem = cutQuoted(elem, ';')
		if pair = strings.Trim(pair, " \t"); pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		v, ok := forwardedValue(value)
		isFor := strings.EqualFold(name, "for")
		if !ok || !isToken(name, "") || isFor && found {
			return "", false
		} else if isFor {
			node, found = v, true
		}
	}
	return node, true
}

// cutQuoted is strings.Cut at the first sep outside a quoted-string.
func cutQuoted(s string, sep byte) (before, after string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// quotedPair is an escape in a quoted-string (RFC 9110, 5.6.4).
var quotedPair = regexp.MustCompile(`(?s)\\(.)`)

// forwardedValue returns the content of a quoted-string or a token (with
// ':', '[' and ']', which proxies leave unquoted).
func forwardedValue(v string) (string, bool) {
	if !strings.HasPrefix(v, `"`) {
		return v, isToken(v, ":[]")
	}
	for i, escaped := 1, false; i < len(v); i++ {
		switch {
		case v[i] == '\\':
			i, escaped = i+1, true
		case v[i] == '"' && escaped:
			return quotedPair.ReplaceAllString(v[1:i], "$1"), i == len(v)-1
		case v[i] == '"':
			return v[1:i], i == len(v)-1
		}
	}
	return "", false
}

// isToken reports whether s is an HTTP token (RFC 9110, 5.6.2) with extra.
func isToken(s, extra string) bool {
	for i := range len(s) {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return s != ""
}

// parseHostPort accepts "ip", "ip:port", "[ip]" and "[ip]:port", the port
// unread as RFC 7239 lets proxies obfuscate it, and unmaps the address.
func parseHostPort(s string) (string, netip.Addr, bool) {
	host, port, bracketed := s, "", strings.HasPrefix(s, "[")
	if end := strings.IndexByte(s, ']'); bracketed && end > 0 {
		host, port = s[1:end], s[end+1:]
	} else if i := strings.IndexByte(s, ':'); i >= 0 && !strings.Contains(s[i+1:], ":") {
		host, port = s[:i], s[i:] // one colon: IPv4 and a port
	}
	a, err := netip.ParseAddr(host)
	if err != nil || port != "" && !isPort(port) || bracketed && !strings.Contains(host, ":") {
		return "", netip.Addr{}, false // only IPv6 goes in brackets
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

// canonicalIPv4Host is the fast path of the usual peer: the host of s if it
// is IPv4 as netip writes it, with a port parseHostPort accepts.
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
