package keyfuncs

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParsePrefixes parses the trusted proxies for ForwardedIP: CIDR prefixes
// ("10.0.0.0/8", "2001:db8::/32") and bare addresses ("192.0.2.10", which
// stands for 192.0.2.10/32, or "::1" for ::1/128). Surrounding spaces are
// ignored, so a comma-separated flag can be split and passed as is.
//
// Prefixes are masked (10.1.2.3/8 becomes 10.0.0.0/8) and IPv4-mapped IPv6
// prefixes are turned into IPv4 ones, because ForwardedIP compares unmapped
// addresses. Anything else, including an empty string or a zone, is an
// error that names the offending entry, so a typo in a configuration file
// stops the program instead of silently trusting nobody (or everybody).
func ParsePrefixes(cidrsOrIPs ...string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrsOrIPs))
	for i, s := range cidrsOrIPs {
		p, err := parsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("keyfuncs: trusted proxy %d (%q): %w", i+1, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, fmt.Errorf("empty; want a CIDR prefix such as 10.0.0.0/8 or an IP address")
	}
	if strings.IndexByte(s, '/') >= 0 {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("not a CIDR prefix such as 10.0.0.0/8 or 2001:db8::/32")
		}
		return normalisePrefix(p), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("not an IP address or CIDR prefix")
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("IPv6 zones are not allowed in trusted proxies")
	}
	return normalisePrefix(netip.PrefixFrom(a, a.BitLen())), nil
}

// normalisePrefix masks p and turns an IPv4-mapped IPv6 prefix of at least
// 96 bits into the equivalent IPv4 prefix, so that it matches the unmapped
// addresses ForwardedIP compares.
func normalisePrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	if a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
