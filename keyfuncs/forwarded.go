package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Bounds on the forwarding headers ForwardedIP reads: a real chain of
// proxies is a handful of hops, while Go's server accepts a megabyte of
// headers, so a longer header is refused rather than walked.
const (
	maxForwardedBytes = 64 << 10 // all lines of the header together
	maxForwardedHops  = 100      // list elements walked or parsed
)

const xffSource = `header "X-Forwarded-For"`

var (
	errXFFTooLarge   = badRequest(xffSource, "too large")
	errXFFHops       = badRequest(xffSource, "too many hops")
	errXFFUnparsable = badRequest(xffSource, "unparsable address")
)

// FromForwarded makes ForwardedIP read the RFC 7239 Forwarded header (its
// for= parameters) instead of X-Forwarded-For. Only the chosen header is
// read, never both: a proxy that sets one usually passes the other through
// from the client untouched, so falling back from one to the other would
// let a client pick its own address. RemoteIP ignores it.
func FromForwarded() IPOption {
	return func(c *ipConfig) { c.forwarded = true }
}

// ForwardedIP keys on the client address as reported by trusted proxies (a
// load balancer, a CDN, a reverse proxy), normalised and grouped like
// RemoteIP's. trusted lists the proxies (see ParsePrefixes); only they are
// believed. A peer that is not trusted is the client, whatever headers it
// sent: believing them would let every request pick a fresh identity.
//
// From a trusted peer, X-Forwarded-For (all its lines; or Forwarded, with
// FromForwarded) is walked from right to left, skipping trusted addresses:
// the first untrusted one is the client. When every hop is trusted (an
// internal caller) the leftmost one is; with no header at all, the peer.
// The leftmost value is never taken blindly, as the client wrote it.
//
// A hop that cannot be parsed, or an obfuscated or "unknown" Forwarded node
// where the client should be, gives a 400 *Error instead of a key many
// clients would share, and so does a header over 64 KiB or 100 elements.
// An empty trusted list makes ForwardedIP behave as RemoteIP; a zero
// netip.Prefix in it makes it panic.
func ForwardedIP(trusted []netip.Prefix, opts ...IPOption) Func {
	c := newIPConfig(opts)
	t := make(trustList, len(trusted))
	for i, p := range trusted {
		if !p.IsValid() {
			panic(fmt.Sprintf("keyfuncs: ForwardedIP: trusted prefix %d is not valid", i))
		}
		t[i] = normalisePrefix(p)
	}
	walk, name := walkXFF, "X-Forwarded-For"
	if c.forwarded {
		walk, name = walkForwarded, "Forwarded"
	}
	return func(r *http.Request) (string, error) {
		host, addr, ok := parseHostPort(r.RemoteAddr)
		if !ok {
			return "", errBadRemote
		}
		if t.contains(addr) {
			h, a, err := walk(r.Header[name], t)
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

func totalLen(lines []string) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}

// walkXFF walks X-Forwarded-For from right to left and returns the first
// untrusted address, or the leftmost one if all are trusted, or no address
// if the header holds none. Elements left of the client are not parsed.
func walkXFF(lines []string, t trustList) (host string, addr netip.Addr, err error) {
	if totalLen(lines) > maxForwardedBytes {
		return "", netip.Addr{}, errXFFTooLarge
	}
	hops := 0
	for li := len(lines) - 1; li >= 0; li-- {
		line := lines[li]
		for end := len(line); end >= 0; {
			start := strings.LastIndexByte(line[:end], ',') + 1
			item := strings.Trim(line[start:end], " \t")
			end = start - 1
			if hops++; hops > maxForwardedHops {
				return "", netip.Addr{}, errXFFHops
			}
			if item == "" { // empty elements are allowed (RFC 9110, 5.6.1)
				continue
			}
			var ok bool
			if host, addr, ok = parseHostPort(item); !ok {
				return "", netip.Addr{}, errXFFUnparsable
			}
			if !t.contains(addr) {
				return host, addr, nil
			}
		}
	}
	return host, addr, nil
}
