package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// A chain of proxies is a handful of hops, while Go's server takes a
// megabyte of headers: a longer forwarding header is refused, not walked.
const (
	maxForwardedBytes = 64 << 10 // all lines of the header together
	maxForwardedHops  = 100      // list elements
)

// ParsePrefixes parses trusted proxies for ForwardedIP: CIDR prefixes
// ("10.0.0.0/8") and addresses ("192.0.2.10" for 192.0.2.10/32), spaces
// around them ignored. Anything else, an empty string or a zone included,
// is an error naming the entry, so that a typo in a configuration stops
// the program rather than trusting nobody, or everybody.
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

// normalisePrefix masks p, and turns an IPv4-mapped prefix into the IPv4
// prefix it stands for, as addresses are compared unmapped.
func normalisePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// FromForwarded makes ForwardedIP read the RFC 7239 Forwarded header (its
// for= parameters) instead of X-Forwarded-For; never both, since a proxy
// that sets one usually passes the other on from the client untouched.
func FromForwarded() IPOption {
	return func(c *ipConfig) { c.forwarded = true }
}

// ForwardedIP keys on the client address reported by trusted proxies (see
// ParsePrefixes), normalised and grouped like RemoteIP's. A peer that is
// not trusted is the client, whatever it sent. From a trusted peer,
// X-Forwarded-For (all lines; or Forwarded, see FromForwarded) is walked
// from right to left past trusted addresses to the first untrusted one, the
// client; if all are trusted, the leftmost one; with no header, the peer.
//
// An address that cannot be parsed, obfuscated or "unknown" where the
// client should be gives a 400 *Error rather than a key many clients would
// share, and so does a header over 64 KiB or 100 elements. With no trusted
// proxies it behaves as RemoteIP; a zero netip.Prefix makes it panic.
func ForwardedIP(trusted []netip.Prefix, opts ...IPOption) Func {
	c := newIPConfig(opts)
	t := make(trustList, len(trusted))
	for i, p := range trusted {
		if !p.IsValid() {
			panic(fmt.Sprintf("keyfuncs: ForwardedIP: trusted prefix %d is not valid", i))
		}
		t[i] = normalisePrefix(p)
	}
	h := newForwarding(c.forwarded)
	return func(r *http.Request) (string, error) {
		host, addr, ok := parseHostPort(r.RemoteAddr)
		if !ok {
			return "", errBadRemote
		}
		if t.contains(addr) {
			h, a, err := h.client(r.Header[h.name], t)
			if err != nil {
				return "", err
			}
			if a.IsValid() {
				host, addr = h, a
			}
		}
		return c.format(host, addr), nil
	}
}

type trustList []netip.Prefix

func (t trustList) contains(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwarding is one of the two forwarding headers, with its errors.
type forwarding struct {
	name                                  string
	rfc7239                               bool
	tooLarge, tooMany, hidden, unparsable error
}

func newForwarding(rfc7239 bool) forwarding {
	h := forwarding{name: "X-Forwarded-For", rfc7239: rfc7239}
	if rfc7239 {
		h.name = "Forwarded"
	}
	source := `header "` + h.name + `"`
	h.tooLarge, h.tooMany = badRequest(source, "too large"), badRequest(source, "too many hops")
	h.hidden = badRequest(source, "obfuscated or unknown client address")
	h.unparsable = badRequest(source, "unparsable address")
	return h
}

// client returns the first untrusted address of lines from the right, or
// the leftmost, or none if they list none. Only the client and the
// proxies right of it are parsed as addresses.
func (h forwarding) client(lines []string, t trustList) (host string, addr netip.Addr, err error) {
	var buf [16]string
	nodes, err := h.appendNodes(buf[:0], lines)
	for i := len(nodes) - 1; i >= 0; i-- {
		if host, addr, err = h.address(nodes[i]); !t.contains(addr) {
			break
		}
	}
	if err != nil {
		return "", netip.Addr{}, err
	}
	return host, addr, nil
}

// appendNodes appends the addresses lines list, left to right.
func (h forwarding) appendNodes(nodes, lines []string) ([]string, error) {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	if n > maxForwardedBytes {
		return nil, h.tooLarge
	}
	for _, line := range lines {
		var err error
		if h.rfc7239 {
			nodes, err = appendForwarded(nodes, line)
		} else {
			nodes = appendXFF(nodes, line)
		}
		switch {
		case err != nil:
			return nil, err
		case len(nodes) > maxForwardedHops:
			return nil, h.tooMany
		}
	}
	return nodes, nil
}

// address parses a node. An obfuscated ("_abc"), "unknown" or missing one
// where the client should be leaves it unknown, and a guess would give
// many clients one key.
func (h forwarding) address(node string) (string, netip.Addr, error) {
	if node == "" || node[0] == '_' || strings.EqualFold(node, "unknown") {
		return "", netip.Addr{}, h.hidden
	}
	host, addr, ok := parseHostPort(node)
	if !ok {
		return "", netip.Addr{}, h.unparsable
	}
	return host, addr, nil
}

// appendXFF appends the non-empty elements of an X-Forwarded-For line (RFC
// 9110 lists allow empty ones), stopping past maxForwardedHops.
func appendXFF(nodes []string, line string) []string {
	for item := range strings.SplitSeq(line, ",") {
		if item = strings.Trim(item, " \t"); item != "" {
			if nodes = append(nodes, item); len(nodes) > maxForwardedHops {
				break
			}
		}
	}
	return nodes
}
