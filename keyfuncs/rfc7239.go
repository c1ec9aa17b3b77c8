package keyfuncs

import (
	"net/netip"
	"strings"
)

// forHop is the for= parameter of one Forwarded element.
type forHop struct {
	node    string // value, without quotes; may hold quoted-pairs if escaped
	has     bool   // the element has a for= parameter
	escaped bool   // node holds backslash escapes
}

// walkForwarded parses RFC 7239 Forwarded lines and walks their for= nodes
// from right to left like walkXFF. The structure of the whole header is
// checked (a stray quote could otherwise make a client's text swallow what
// a proxy appended), but node values are only looked at up to the client.
func walkForwarded(lines []string, t trustList) (host string, addr netip.Addr, found bool, err error) {
	if totalLen(lines) > MaxForwardedBytes {
		return "", netip.Addr{}, false, fwdError(forwardedSource, "too large")
	}
	var buf [16]forHop
	hops := buf[:0]
	for _, line := range lines {
		if hops, err = parseForwardedLine(line, hops); err != nil {
			return "", netip.Addr{}, false, err
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop := hops[i]
		if !hop.has {
			return "", netip.Addr{}, false, fwdError(forwardedSource, "obfuscated or unknown client address")
		}
		node := hop.node
		if hop.escaped {
			node = unquote(node)
		}
		if strings.EqualFold(node, "unknown") || strings.HasPrefix(node, "_") {
			return "", netip.Addr{}, false, fwdError(forwardedSource, "obfuscated or unknown client address")
		}
		h, a, ok := parseHostPort(node)
		if !ok {
			return "", netip.Addr{}, false, fwdError(forwardedSource, "unparsable address")
		}
		host, addr, found = h, a, true
		if !t.contains(a) {
			return host, addr, true, nil
		}
	}
	return host, addr, found, nil
}

// parseForwardedLine appends the for= parameters of the elements of one
// header line to hops:
//
//	Forwarded         = 1#forwarded-element
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
//
// Parameter names are case-insensitive. Unquoted values may also hold ':',
// '[' and ']', which some proxies write without the quotes RFC 7239 asks
// for; nothing else is relaxed.
func parseForwardedLine(s string, hops []forHop) ([]forHop, error) {
	malformed := func() ([]forHop, error) { return hops, fwdError(forwardedSource, "malformed") }
	i := 0
	for {
		i = skipOWS(s, i)
		if i == len(s) {
			return hops, nil
		}
		if s[i] == ',' { // empty element
			i++
			continue
		}
		var hop forHop
		for i < len(s) && s[i] != ',' {
			if s[i] == ';' {
				i = skipOWS(s, i+1)
				continue
			}
			start := i
			for i < len(s) && isTchar(s[i]) {
				i++
			}
			name := s[start:i]
			if name == "" || i == len(s) || s[i] != '=' {
				return malformed()
			}
			i++
			var val string
			escaped := false
			if i < len(s) && s[i] == '"' {
				i++
				vs := i
				for ; i < len(s) && s[i] != '"'; i++ {
					if s[i] == '\\' {
						escaped = true
						i++
					}
				}
				if i >= len(s) {
					return malformed() // unterminated quoted-string
				}
				val = s[vs:i]
				i++
			} else {
				vs := i
				for i < len(s) && (isTchar(s[i]) || s[i] == ':' || s[i] == '[' || s[i] == ']') {
					i++
				}
				if i == vs {
					return malformed()
				}
				val = s[vs:i]
			}
			if strings.EqualFold(name, "for") {
				if hop.has {
					return malformed() // RFC 7239: at most once per element
				}
				hop = forHop{node: val, has: true, escaped: escaped}
			}
			i = skipOWS(s, i)
			if i < len(s) && s[i] != ';' && s[i] != ',' {
				return malformed()
			}
		}
		if len(hops) == MaxForwardedHops {
			return hops, fwdError(forwardedSource, "too many hops")
		}
		hops = append(hops, hop)
	}
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isTchar reports whether c may appear in an HTTP token (RFC 9110, 5.6.2).
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// unquote resolves the quoted-pairs of a quoted-string's content.
func unquote(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
