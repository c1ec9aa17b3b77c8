package keyfuncs_test

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/go-throttle/throttle/keyfuncs"
)

func ExampleHeader() {
	key := keyfuncs.Header("X-User-ID")

	r := httptest.NewRequest("POST", "/submit", nil)
	r.Header.Set("X-User-ID", "42")
	fmt.Println(key(r))

	// Without the header the request is rejected (400), not throttled
	// under a key shared by everybody.
	_, err := key(httptest.NewRequest("POST", "/submit", nil))
	fmt.Println(err)
	// Output:
	// 42 <nil>
	// keyfuncs: header "X-User-ID": missing
}

func ExampleFirstOf() {
	// The user ID when there is one, the client address otherwise. The
	// index of the func that answered is part of the identity, so a user
	// called "192.0.2.1" and the client at 192.0.2.1 never share a lock.
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	withID := httptest.NewRequest("POST", "/submit", nil)
	withID.Header.Set("X-User-ID", "192.0.2.1")
	fmt.Println(key(withID))

	anonymous := httptest.NewRequest("POST", "/submit", nil)
	anonymous.RemoteAddr = "192.0.2.1:52100"
	fmt.Println(key(anonymous))
	// Output:
	// 0:192.0.2.1 <nil>
	// 1:192.0.2.1 <nil>
}

func ExampleRemoteIP_proxies() {
	// The load balancers live in 10.0.0.0/16; only they are believed.
	lbs, err := netip.ParsePrefix("10.0.0.0/16")
	if err != nil {
		panic(err) // a typo in the configuration
	}
	key := keyfuncs.RemoteIP(keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{lbs}, IPv6Prefix: 64})

	// Through the load balancer: the client prepended a fake address,
	// the load balancer appended the one it saw. Right to left, the first
	// untrusted address is the real client.
	viaLB := httptest.NewRequest("POST", "/submit", nil)
	viaLB.RemoteAddr = "10.0.3.7:41000"
	viaLB.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.23")
	fmt.Println(key(viaLB))

	// Straight from the internet: the header is ignored.
	direct := httptest.NewRequest("POST", "/submit", nil)
	direct.RemoteAddr = "203.0.113.9:5000"
	direct.Header.Set("X-Forwarded-For", "6.6.6.6")
	fmt.Println(key(direct))

	// An IPv6 client is keyed by its /64.
	v6 := httptest.NewRequest("POST", "/submit", nil)
	v6.RemoteAddr = "10.0.3.7:41000"
	v6.Header.Set("X-Forwarded-For", "2001:db8:1:2:a:b:c:d")
	fmt.Println(key(v6))
	// Output:
	// 198.51.100.23 <nil>
	// 203.0.113.9 <nil>
	// 2001:db8:1:2::/64 <nil>
}

func ExampleJoin() {
	// One submission per user and route.
	key := keyfuncs.Join(keyfuncs.Header("X-User-ID"), keyfuncs.Method(), keyfuncs.Static("orders"))

	r := httptest.NewRequest("POST", "/orders", nil)
	r.Header.Set("X-User-ID", "42")
	fmt.Println(key(r))
	// Output:
	// 42:POST:orders <nil>
}

func ExampleBodyHash() {
	// The same body twice gives the same key: a double submission.
	key := keyfuncs.BodyHash(64 << 10)
	a, _ := key(httptest.NewRequest("POST", "/pay", strings.NewReader(`{"amount":10}`)))
	b, _ := key(httptest.NewRequest("POST", "/pay", strings.NewReader(`{"amount":10}`)))
	c, _ := key(httptest.NewRequest("POST", "/pay", strings.NewReader(`{"amount":11}`)))
	fmt.Println(a == b, a == c, len(a))
	// Output:
	// true false 43
}
