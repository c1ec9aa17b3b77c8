package keyfuncs

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// The benchmarks run one key func on one prepared request, single
// goroutine; key cardinality is 1 (the same request every time). They
// measure the per-request cost of building the identity, before any store
// round trip.

func benchKey(b *testing.B, f Func, r *http.Request) {
	b.Helper()
	_, err := f(r)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRemoteIP(b *testing.B) {
	b.Run("ipv4", func(b *testing.B) { benchKey(b, RemoteIP(), req("192.0.2.1:52100")) })
	b.Run("ipv6", func(b *testing.B) { benchKey(b, RemoteIP(), req("[2001:db8::1]:52100")) })
	b.Run("ipv6-group64", func(b *testing.B) { benchKey(b, RemoteIP(IPConfig{IPv6Prefix: 64}), req("[2001:db8::1]:52100")) })
}

func BenchmarkForwardedIP(b *testing.B) {
	trusted := mustPrefixes(b, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
	b.Run("xff-3hops", func(b *testing.B) {
		benchKey(b, RemoteIP(IPConfig{TrustedProxies: trusted}), req("10.0.0.2:1", "X-Forwarded-For", "198.51.100.7, 172.16.0.9, 192.168.1.1"))
	})
	b.Run("forwarded-3hops", func(b *testing.B) {
		benchKey(b, RemoteIP(IPConfig{TrustedProxies: trusted, Forwarded: true}), req("10.0.0.2:1", "Forwarded",
			`for=198.51.100.7;proto=https, for=172.16.0.9, for="192.168.1.1:80"`))
	})
	b.Run("untrusted-peer", func(b *testing.B) {
		benchKey(b, RemoteIP(IPConfig{TrustedProxies: trusted}), req("203.0.113.1:1", "X-Forwarded-For", "6.6.6.6"))
	})
}

func BenchmarkHeader(b *testing.B) {
	benchKey(b, Header("X-User-ID"), req("192.0.2.1:1", "X-User-ID", "user-42"))
}

func BenchmarkFirstOf(b *testing.B) {
	key := FirstOf(Header("X-User-ID"), RemoteIP())
	b.Run("header", func(b *testing.B) { benchKey(b, key, req("192.0.2.1:1", "X-User-ID", "user-42")) })
	b.Run("fallback-ip", func(b *testing.B) { benchKey(b, key, req("192.0.2.1:1")) })
}

func BenchmarkJoin(b *testing.B) {
	benchKey(b, Join(Header("X-User-ID"), Method(), Static("orders")), req("192.0.2.1:1", "X-User-ID", "user-42"))
}

func BenchmarkQuery(b *testing.B) {
	benchKey(b, Query("id"), httptest.NewRequest(http.MethodGet, "/?a=1&id=42&b=2", nil))
}

func BenchmarkBodyHash1KiB(b *testing.B) {
	f := BodyHash(64 << 10)
	body := make([]byte, 1<<10)
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r.Body = &closeTracker{Reader: bytes.NewReader(body)}
		if _, err := f(r); err != nil {
			b.Fatal(err)
		}
	}
}
