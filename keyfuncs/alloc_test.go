//go:build !race

package keyfuncs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllocs pins the allocation budget of the funcs on the hot path of
// every throttled request (the race detector changes allocation counts,
// hence the build tag). Allocation counts are deterministic, unlike times.
func TestAllocs(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
	firstOf := FirstOf(Header("X-User-ID"), RemoteIP())
	const uuid = `"8e03978e-40d5-43e8-bc93-6894a57f9324"`
	tests := []struct {
		name string
		f    Func
		req  []string // peer, then header name/value pairs
		max  float64
	}{
		{"RemoteIP ipv4", RemoteIP(), []string{"192.0.2.1:1"}, 0},
		{"RemoteIP ipv6 /64", RemoteIP(IPConfig{IPv6Prefix: 64}), []string{"[2001:db8::1]:1"}, 1},
		{"RemoteIP xff 3 hops", RemoteIP(IPConfig{TrustedProxies: trusted}),
			[]string{"10.0.0.2:1", "X-Forwarded-For", "198.51.100.7, 172.16.0.9, 192.168.1.1"}, 1},
		{"RemoteIP forwarded 3 hops", RemoteIP(IPConfig{TrustedProxies: trusted, Forwarded: true}),
			[]string{"10.0.0.2:1", "Forwarded", `for=198.51.100.7;proto=https, for=172.16.0.9, for="192.168.1.1:80"`}, 1},
		{"Header", Header("X-User-ID"), []string{"192.0.2.1:1", "X-User-ID", "42"}, 0},
		{"FirstOf header", firstOf, []string{"192.0.2.1:1", "X-User-ID", "42"}, 1},
		{"FirstOf fallback", firstOf, []string{"192.0.2.1:1"}, 1},
		{"IdempotencyKey quoted", IdempotencyKey(nil), []string{"192.0.2.1:1", "Idempotency-Key", uuid}, 0},
	}
	for _, tt := range tests {
		r := req(tt.req[0], tt.req[1:]...)
		_, err := tt.f(r)
		require.NoError(t, err, tt.name)
		assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = tt.f(r) }), tt.max, "%s: allocations per request", tt.name)
	}
}
