package guard

import (
	"cmp"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
)

// replayID is the identity a Replay stores for id: scoped by the method
// and the route matched (the request's path when none was), so that one
// Replay guarding two routes, or two methods of one, never answers a
// request with another route's response.
func replayID(r *http.Request, route, id string) string {
	if route == "" {
		route = r.URL.Path
	}
	return storekit.JoinID(cmp.Or(r.Method, http.MethodGet), route, id)
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
