package guard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestInputs checks which per-request functions each mode keeps: the cost
// under a Quota only, the fingerprint under a Replay only, with the
// idempotency fingerprint when none is given.
func TestInputs(t *testing.T) {
	cost := func(*http.Request) (int, error) { return 2, nil }
	fp := func(*http.Request) (string, error) { return "mine", nil }
	guardFor := func(mode throttle.Mode) *Guard {
		p := throttle.Policy{Name: "p", Mode: mode}
		if mode == throttle.Quota {
			p.Limit = 10
		}
		l, err := throttle.New(memstore.New(), p)
		if err != nil {
			t.Fatal(err)
		}
		return New(l)
	}
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"a"}`))
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown, throttle.Exclusive, throttle.Quota, throttle.Replay} {
		g := guardFor(mode)
		c, f := g.Inputs(cost, fp)
		if got := c != nil; got != (mode == throttle.Quota) {
			t.Errorf("%v: cost kept = %v", mode, got)
		}
		if c != nil {
			if n, _ := c(r); n != 2 {
				t.Errorf("%v: cost %d, want the given function's 2", mode, n)
			}
		}
		if got := f != nil; got != (mode == throttle.Replay) {
			t.Errorf("%v: fingerprint kept = %v", mode, got)
		}
		if f != nil {
			if s, _ := f(r); s != "mine" {
				t.Errorf("%v: fingerprint %q, want the given function's", mode, s)
			}
		}
		if _, f := g.Inputs(nil, nil); mode == throttle.Replay {
			want, err := keyfuncs.IdempotencyFingerprint(httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"a"}`)))
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				t.Fatalf("%v: no default fingerprint", mode)
			}
			if got, _ := f(httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"a"}`))); got != want {
				t.Errorf("%v: default fingerprint %q, want keyfuncs.IdempotencyFingerprint's %q", mode, got, want)
			}
		}
	}
}
