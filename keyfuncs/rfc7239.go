package keyfuncs

import "strings"

var errFwdMalformed = badRequest(`header "Forwarded"`, "malformed")

// fwdParser reads a Forwarded line (RFC 7239, section 4):
//
//	Forwarded         = 1#forwarded-element
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
type fwdParser struct {
	s string
	i int
}

// appendForwarded appends each element's for= node, "" where it has none.
func appendForwarded(nodes []string, line string) ([]string, error) {
	p := fwdParser{s: line}
	for p.skip(isOWS); p.i < len(p.s) && len(nodes) <= maxForwardedHops; p.skip(isOWS) {
		if p.next(',') {
			continue
		}
		node, err := p.element()
		if err != nil {
			return nodes, err
		}
		nodes = append(nodes, node)
	}
	return nodes, nil
}

func (p *fwdParser) element() (node string, err error) {
	found := false
	for !p.next(',') && p.i < len(p.s) {
		if p.next(';') {
			p.skip(isOWS)
			continue
		}
		name := p.skip(isTchar)
		isFor := strings.EqualFold(name, "for")
		if name == "" || !p.next('=') || isFor && found {
			return "", errFwdMalformed
		}
		value, ok := p.value()
		if p.skip(isOWS); !ok || p.i < len(p.s) && p.s[p.i] != ';' && p.s[p.i] != ',' {
			return "", errFwdMalformed
		}
		if isFor {
			node, found = value, true
		}
	}
	return node, nil
}

// value reads a token (with ':', '[', ']', which proxies leave unquoted in
// nodes) or a quoted-string, and returns its content.
func (p *fwdParser) value() (string, bool) {
	if !p.next('"') {
		v := p.skip(isNodeChar)
		return v, v != ""
	}
	start := p.i
	for ; p.i < len(p.s) && p.s[p.i] != '"'; p.i++ {
		if p.s[p.i] == '\\' && p.i+1 < len(p.s) {
			p.i++
		}
	}
	if !p.next('"') {
		return "", false
	}
	return unquote(p.s[start : p.i-1]), true
}

func (p *fwdParser) skip(match func(byte) bool) string {
	start := p.i
	for p.i < len(p.s) && match(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

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

func unquote(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
