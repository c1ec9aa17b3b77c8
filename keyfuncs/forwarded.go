package keyfuncs

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Bounds on the forwarding headers ForwardedIP reads. Go's server accepts
// up to 1 MB of headers by default; a real chain of proxies is a handful of
// hops, so anything beyond these limits is rejected with a 400 instead of
// being walked, which keeps the work per request small and linear.
const (
	// MaxForwardedBytes is the most header text (all lines of
	// X-Forwarded-For or Forwarded together) ForwardedIP accepts.
	MaxForwardedBytes = 64 << 10
	// MaxForwardedHops is the most list elements ForwardedIP walks or
	// parses in one request.
	MaxForwardedHops = 100
)

const (
	xffName       = "X-Forwarded-For"
	forwardedName = "Forwarded"
)

var (
	xffSource       = `header "X-Forwarded-For"`
	forwardedSource = `header "Forwarded"`
)

// FromForwarded makes ForwardedIP read the standard RFC 7239 Forwarded
// header (its for= parameters) instead of X-Forwarded-For. Only the chosen
// header is read, never both: a proxy that sets one usually passes the
// other through from the client untouched, so falling back from one to the
// other would let a client pick its own address. RemoteIP ignores it.
func FromForwarded() IPOption {
	return func(c *ipConfig) { c.forwarded = true }
}

// ForwardedIP keys on the client address as reported by trusted proxies: a
// load balancer, a CDN, a reverse proxy. trusted lists the proxies'
// addresses (see ParsePrefixes); only they are believed.
//
// If the direct peer (r.RemoteAddr) is not trusted, its forwarding headers
// are ignored and the peer itself is the client: anybody can send an
// X-Forwarded-For header, so believing it from an arbitrary peer would let
// every request pick a fresh identity and escape the limit. If the peer is
// trusted, the X-Forwarded-For header (all its lines, comma-separated; or
// Forwarded with FromForwarded) is walked from right to left, skipping
// addresses of trusted proxies; the first address that is not trusted is
// the client. When every hop is trusted (an internal caller), the leftmost
// one is the client; with no header at all, the peer is.
//
// Right to left, because each proxy appends the address it received the
// connection from: the right end was written by proxies you trust, the
// left end by whoever sent the request. The leftmost value is never taken
// blindly.
//
// A hop that cannot be parsed, or an obfuscated or "unknown" Forwarded node,
// where the client should be gives a *Error with status 400 instead of a
// key that many clients would share, and so do headers longer than
// MaxForwardedBytes or with more than MaxForwardedHops elements. The result
// is normalised and grouped like RemoteIP's.
//
// ForwardedIP panics if a trusted prefix is the zero netip.Prefix (a
// programming error). An empty trusted list makes it behave as RemoteIP.
func ForwardedIP(trusted []netip.Prefix, opts ...IPOption) Func {
	c := newIPConfig(opts)
	t := make(trustList, 0, len(trusted))
	for i, p := range trusted {
		if !p.IsValid() {
			panic(fmt.Sprintf("keyfuncs: ForwardedIP: trusted prefix %d is not valid", i))
		}
		t = append(t, normalisePrefix(p))
	}
	return func(r *http.Request) (string, error) {
		host, peer, err := parseRemote(r.RemoteAddr)
		if err != nil {
			return "", err
		}
		if !t.contains(peer) {
			return c.format(host, peer), nil
		}
		var found bool
		var h string
		var a netip.Addr
		if c.forwarded {
			h, a, found, err = walkForwarded(r.Header[forwardedName], t)
		} else {
			h, a, found, err = walkXFF(r.Header[xffName], t)
		}
		if err != nil {
			return "", err
		}
		if found {
			host, peer = h, a
		}
		return c.format(host, peer), nil
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

func fwdError(source, reason string) error {
	return &Error{Status: http.StatusBadRequest, Source: source, Reason: reason}
}

func totalLen(lines []string) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}

// walkXFF walks X-Forwarded-For from right to left and returns the first
// untrusted address, or the leftmost one if all are trusted. found is false
// when the header holds no address at all.
func walkXFF(lines []string, t trustList) (host string, addr netip.Addr, found bool, err error) {
	if totalLen(lines) > MaxForwardedBytes {
		return "", netip.Addr{}, false, fwdError(xffSource, "too large")
	}
	hops := 0
	for li := len(lines) - 1; li >= 0; li-- {
		line := lines[li]
		end := len(line)
		for end >= 0 {
			start := strings.LastIndexByte(line[:end], ',') + 1
			item := strings.Trim(line[start:end], " \t")
			end = start - 1
			if hops++; hops > MaxForwardedHops {
				return "", netip.Addr{}, false, fwdError(xffSource, "too many hops")
			}
			if item == "" {
				continue // empty list elements are allowed and ignored (RFC 9110, 5.6.1)
			}
			h, a, ok := parseHostPort(item)
			if !ok {
				return "", netip.Addr{}, false, fwdError(xffSource, "unparsable address")
			}
			host, addr, found = h, a, true
			if !t.contains(a) {
				return host, addr, true, nil
			}
		}
	}
	return host, addr, found, nil
}
