package keyfuncs

import (
	"net/netip"
	"strings"
)

const forwardedSource = `header "Forwarded"`

var (
	errFwdTooLarge   = badRequest(forwardedSource, "too large")
	errFwdHops       = badRequest(forwardedSource, "too many hops")
	errFwdMalformed  = badRequest(forwardedSource, "malformed")
	errFwdHidden     = badRequest(forwardedSource, "obfuscated or unknown client address")
	errFwdUnparsable = badRequest(forwardedSource, "unparsable address")
)

// forHop is the for= parameter of one Forwarded element.
type forHop struct {
	node    string // the value without its quotes, quoted-pairs unresolved
	has     bool   // the element has a for= parameter
	escaped bool   // node holds quoted-pairs
}

// walkForwarded walks the for= nodes of RFC 7239 Forwarded lines from right
// to left like walkXFF. The whole header is parsed first, since a stray
// quote could otherwise make a client's text swallow what a proxy appended,
// but nodes are only read up to the client.
func walkForwarded(lines []string, t trustList) (host string, addr netip.Addr, err error) {
	if totalLen(lines) > maxForwardedBytes {
		return "", netip.Addr{}, errFwdTooLarge
	}
	var buf [16]forHop
	hops := buf[:0]
	for _, line := range lines {
		if hops, err = appendForwarded(hops, line); err != nil {
			return "", netip.Addr{}, err
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		if host, addr, err = hops[i].address(); err != nil || !t.contains(addr) {
			break
		}
	}
	return host, addr, err
}

// address parses the node of h, which must name an address: without for=,
// or with an obfuscated ("_abc") or "unknown" node, the client is unknown,
// and a guess would give many clients one key.
func (h forHop) address() (string, netip.Addr, error) {
	node := h.node
	if h.escaped {
		node = unquote(node)
	}
	if !h.has || strings.EqualFold(node, "unknown") || strings.HasPrefix(node, "_") {
		return "", netip.Addr{}, errFwdHidden
	}
	host, addr, ok := parseHostPort(node)
	if !ok {
		return "", netip.Addr{}, errFwdUnparsable
	}
	return host, addr, nil
}

// fwdParser reads one Forwarded line (RFC 7239, section 4):
//
//	Forwarded         = 1#forwarded-element
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
type fwdParser struct {
	s string
	i int
}

// appendForwarded appends the for= parameter of each element of line,
// skipping empty elements.
func appendForwarded(hops []forHop, line string) ([]forHop, error) {
	p := fwdParser{s: line}
	for p.skip(isOWS); p.i < len(p.s); p.skip(isOWS) {
		if p.next(',') {
			continue
		}
		hop, err := p.element()
		switch {
		case err != nil:
			return hops, err
		case len(hops) == maxForwardedHops:
			return hops, errFwdHops
		}
		hops = append(hops, hop)
	}
	return hops, nil
}

// element reads the pairs of one element and the ',' that ends it.
// Parameter names are case-insensitive; for= may appear once.
func (p *fwdParser) element() (hop forHop, err error) {
	for !p.next(',') && p.i < len(p.s) {
		if p.next(';') {
			p.skip(isOWS)
			continue
		}
		name := p.skip(isTchar)
		if name == "" || !p.next('=') {
			return hop, errFwdMalformed
		}
		node, escaped, ok := p.value()
		isFor := strings.EqualFold(name, "for")
		if !ok || isFor && hop.has {
			return hop, errFwdMalformed
		}
		if p.skip(isOWS); p.i < len(p.s) && p.s[p.i] != ';' && p.s[p.i] != ',' {
			return hop, errFwdMalformed
		}
		if isFor {
			hop = forHop{node: node, has: true, escaped: escaped}
		}
	}
	return hop, nil
}

// value reads a token or a quoted-string and returns its content. A token
// may also hold ':', '[' and ']', which some proxies write without the
// quotes RFC 7239 asks for; nothing else is relaxed.
func (p *fwdParser) value() (content string, escaped, ok bool) {
	if !p.next('"') {
		v := p.skip(isNodeChar)
		return v, false, v != ""
	}
	start := p.i
	for ; p.i < len(p.s) && p.s[p.i] != '"'; p.i++ {
		if p.s[p.i] == '\\' {
			escaped = true
			p.i++
		}
	}
	if p.i >= len(p.s) {
		return "", false, false
	}
	p.i++
	return p.s[start : p.i-1], escaped, true
}

// skip reads the bytes that match and returns them.
func (p *fwdParser) skip(match func(byte) bool) string {
	start := p.i
	for p.i < len(p.s) && match(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// next reads c if it comes next.
func (p *fwdParser) next(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func isOWS(c byte) bool { return c == ' ' || c == '\t' }

// isTchar reports whether c may appear in an HTTP token (RFC 9110, 5.6.2).
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isNodeChar(c byte) bool { return isTchar(c) || c == ':' || c == '[' || c == ']' }

// unquote resolves the quoted-pairs of a quoted-string's content.
func unquote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
