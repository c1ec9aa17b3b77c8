package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Proxy chains are a few hops: a longer header is refused, not walked.
const (
	maxForwardedBytes = 64 << 10 // all lines of the header together
	maxForwardedHops  = 100      // addresses listed
)

// ParsePrefixes parses trusted proxies for ForwardedIP, CIDR prefixes and
// addresses, and names the entry it cannot parse, so that a typo stops the
// program rather than trusting nobody, or everybody.
func ParsePrefixes(cidrsOrIPs ...string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrsOrIPs))
	for i, s := range cidrsOrIPs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if a, aerr := netip.ParseAddr(strings.TrimSpace(s)); aerr == nil && a.Zone() == "" {
			p, err = netip.PrefixFrom(a, a.BitLen()), nil
		}
		if err != nil {
			return nil, fmt.Errorf("keyfuncs: trusted proxy %d (%q): want a CIDR prefix such as 10.0.0.0/8 or an IP address without zone", i+1, s)
		}
		out = append(out, normalisePrefix(p))
	}
	return out, nil
}

func normalisePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// FromForwarded makes ForwardedIP read RFC 7239 Forwarded instead of
// X-Forwarded-For: never both, as proxies pass the other on untouched.
func FromForwarded() IPOption {
	return func(c *ipConfig) { c.forwarded = true }
}

// ForwardedIP keys on the client address trusted proxies report, written
// like RemoteIP's. From a trusted peer, X-Forwarded-For is walked from the
// right past trusted addresses to the client (or the leftmost, or the peer
// with no header); any other peer is the client, whatever it sent. A bad,
// hidden or "unknown" client, or a header over 64 KiB or 100 addresses,
// gives a 400 *Error rather than a key clients would share.
func ForwardedIP(trusted []netip.Prefix, opts ...IPOption) Func {
	c := newIPConfig(opts)
	h := forwarding{trusted: make([]netip.Prefix, len(trusted)), name: "X-Forwarded-For", rfc7239: c.forwarded}
	for i, p := range trusted {
		if !p.IsValid() {
			panic(fmt.Sprintf("keyfuncs: ForwardedIP: trusted prefix %d is not valid", i))
		}
		h.trusted[i] = normalisePrefix(p)
	}
	if h.rfc7239 {
		h.name = "Forwarded"
	}
	return func(r *http.Request) (string, error) {
		host, addr, ok := parseHostPort(r.RemoteAddr)
		if !ok {
			return "", errBadRemote
		}
		if h.trusts(addr) {
			clientHost, client, err := h.client(r.Header[h.name])
			switch {
			case err != nil:
				return "", err
			case client.IsValid():
				host, addr = clientHost, client
			}
		}
		return c.format(host, addr), nil
	}
}

// forwarding reads one of the two forwarding headers from trusted proxies.
type forwarding struct {
	trusted []netip.Prefix
	name    string
	rfc7239 bool
}

func (h *forwarding) trusts(a netip.Addr) bool {
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (h *forwarding) refusal(reason string) error { return badRequest(`header "`+h.name+`"`, reason) }

// client returns the first untrusted address from the right, or the leftmost.
func (h *forwarding) client(lines []string) (host string, addr netip.Addr, err error) {
	var buf [16]string
	nodes, err := h.appendNodes(buf[:0], lines)
	for i := len(nodes) - 1; i >= 0; i-- {
		if host, addr, err = h.address(nodes[i]); !h.trusts(addr) {
			break // the client, or an error with no address
		}
	}
	return host, addr, err
}

func (h *forwarding) appendNodes(nodes, lines []string) ([]string, error) {
	size := 0
	for _, line := range lines {
		var err error
		if size += len(line); size > maxForwardedBytes {
			return nil, h.refusal("too large")
		} else if h.rfc7239 {
			nodes, err = appendForwarded(nodes, line)
		} else {
			nodes = appendXFF(nodes, line)
		}
		switch {
		case err != nil:
			return nil, err
		case len(nodes) > maxForwardedHops:
			return nil, h.refusal("too many hops")
		}
	}
	return nodes, nil
}

// address parses a node; a hidden one leaves the client unknown.
func (h *forwarding) address(node string) (string, netip.Addr, error) {
	host, addr, ok := parseHostPort(node)
	switch {
	case ok:
		return host, addr, nil
	case node == "" || node[0] == '_' || strings.EqualFold(node, "unknown"):
		return "", netip.Addr{}, h.refusal("obfuscated or unknown client address")
	}
	return "", netip.Addr{}, h.refusal("unparsable address")
}

func appendXFF(nodes []string, line string) []string {
	for i := 0; i >= 0 && len(nodes) <= maxForwardedHops; {
		item := line
		if i = strings.IndexByte(line, ','); i >= 0 {
			item, line = line[:i], line[i+1:]
		}
		if item = strings.Trim(item, " \t"); item != "" {
			nodes = append(nodes, item)
		}
	}
	return nodes
}
