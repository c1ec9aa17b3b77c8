package keyfuncs

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParsePrefixes parses the trusted proxies for ForwardedIP: CIDR prefixes
// ("10.0.0.0/8", "2001:db8::/32") and bare addresses ("192.0.2.10" stands
// for 192.0.2.10/32). Surrounding spaces are ignored, so a comma-separated
// flag can be split and passed as is. Prefixes are masked, and IPv4-mapped
// ones turned into IPv4, as ForwardedIP compares unmapped addresses.
// Anything else, an empty string or a zone included, is an error naming
// the entry, so a typo in a configuration file stops the program instead
// of silently trusting nobody, or everybody.
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
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, errors.New("not a CIDR prefix such as 10.0.0.0/8 or 2001:db8::/32")
		}
		return normalisePrefix(p), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errors.New("not an IP address (without zone) or CIDR prefix")
	}
	return normalisePrefix(netip.PrefixFrom(a, a.BitLen())), nil
}

// normalisePrefix masks p and turns an IPv4-mapped IPv6 prefix of at least
// 96 bits into the IPv4 prefix it stands for.
func normalisePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
