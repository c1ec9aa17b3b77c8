package guard

import (
	"strconv"
	"time"

	"github.com/go-throttle/throttle/throttle/flow"
)

// LegacyHeaders adds the de facto X-RateLimit-Limit, X-RateLimit-Remaining
// and X-RateLimit-Reset fields beside the RateLimit and RateLimit-Policy
// fields of draft-ietf-httpapi-ratelimit-headers, for clients and gateways
// that read only those: X-RateLimit-Limit is the policy's q, and goes on
// every answer that carries RateLimit-Policy; X-RateLimit-Remaining and
// X-RateLimit-Reset are the RateLimit field's r and t (seconds until the
// quota is whole again or the key is free), and go with it, Reset omitted
// when RateLimit has no t. Where several policies are listed, they describe
// the first, the most restrictive. Without this option none of them is set
// and nothing is spent on them.
func LegacyHeaders() Option {
	return func(g *Guard) { g.legacy = true }
}

// setLimits sets the RateLimit fields lim gives, and the legacy ones.
func (g *Guard) setLimits(h map[string][]string, lim *flow.Limits) {
	policy, limit := lim.Fields()
	if policy == nil {
		return
	}
	h["Ratelimit-Policy"] = policy
	if limit != nil {
		h["Ratelimit"] = limit
	}
	if !g.legacy {
		return
	}
	first := lim.First()
	h["X-Ratelimit-Limit"] = smallInt(int64(first.Quota))
	if first.Remaining >= 0 {
		h["X-Ratelimit-Remaining"] = smallInt(int64(first.Remaining))
	}
	if first.Reset > 0 {
		h["X-Ratelimit-Reset"] = smallInt(int64(first.Reset / time.Second))
	}
}

// smallInt is the field value of n, shared for 0 to 599.
func smallInt(n int64) []string {
	if n >= 0 && n < int64(len(smallInts)) {
		return smallInts[n]
	}
	return []string{strconv.FormatInt(n, 10)}
}

var smallInts = func() (s [600][]string) {
	for i := range s {
		s[i] = []string{strconv.Itoa(i)}
	}
	return s
}()

// seconds returns d in whole seconds, rounded up, at least 1.
func seconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}
