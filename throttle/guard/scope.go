package guard

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
)

// replayID is the identity a Replay stores for id: scoped by the method
// and the route matched (the request's path when none was), so that one
// Replay guarding two routes, or two methods of one, never answers a
// request with another route's response.
func replayID(r *http.Request, route, id string) string {
	route = routePath(route)
	if route == "" {
		route = r.URL.Path
	}
	return storekit.JoinID(cmp.Or(r.Method, http.MethodGet), route, id)
}

// routePath is the path of a route: a net/http ServeMux pattern without
// its method and host ("POST example.com/orders/{id}": "/orders/{id}"); a
// gin or echo route as it is.
func routePath(pattern string) string {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		pattern = strings.TrimLeft(pattern[i+1:], " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:]
	}
	return pattern
}

// writeReplay answers a Replay duplicate with the recorded response under
// the RateLimit fields of now, never the recorded ones: the policy as
// configured, r=0 and t the seconds the key is still held (RetryAfter, set
// by replayed; none when the record does not say).
func (rej *Rejection) writeReplay(w http.ResponseWriter) {
	g := rej.g
	h := w.Header()
	secs := int64(-1)
	if rej.RetryAfter > 0 {
		secs = seconds(rej.RetryAfter)
	}
	h["Ratelimit-Policy"] = g.policyField
	h["Ratelimit"] = g.rejectedFields.get(secs)
	if g.legacy {
		setLegacy(h, 1, 0, secs)
	}
	rej.replay.write(w)
}

// untilExpiry is how long a record that expires at expires is still held;
// 0 when unknown (a record without its expiry) or past.
func untilExpiry(expires time.Time) time.Duration {
	if expires.UnixMilli() <= 0 {
		return 0
	}
	return max(time.Until(expires), 0)
}
