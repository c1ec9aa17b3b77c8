package guard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestInputs checks which per-request functions each mode keeps: the cost
// under a Quota only, the fingerprint under a Replay only, with the
// idempotency fingerprint when none is given.
func TestInputs(t *testing.T) {
	cost := func(*http.Request) (int, error) { return 2, nil }
	fp := func(*http.Request) (string, error) { return "mine", nil }
	st := memstore.New()
	guardFor := func(mode throttle.Mode, opts ...Option) *Guard {
		switch mode {
		case throttle.ModeQuota:
			q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "p"})
			require.NoError(t, err)
			return Quota(q, throttle.Rate{Limit: 10, Window: time.Minute}, opts...)
		case throttle.ModeReplay:
			r, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "p"})
			require.NoError(t, err)
			return Replay(r, opts...)
		}
		l, err := throttle.NewLock(st, throttle.LockConfig{Name: "p", Mode: mode})
		require.NoError(t, err)
		return Lock(l, opts...)
	}
	body := func() *http.Request {
		return httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"a"}`))
	}
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown, throttle.Exclusive, throttle.ModeQuota, throttle.ModeReplay} {
		g := guardFor(mode, WithCost(cost), WithFingerprint(fp))
		assert.Equal(t, mode == throttle.ModeQuota, g.cost != nil, "%v: cost kept", mode)
		if g.cost != nil {
			n, _ := g.cost(body())
			assert.Equal(t, 2, n, "%v: the given cost function", mode)
		}
		assert.Equal(t, mode == throttle.ModeReplay, g.fingerprint != nil, "%v: fingerprint kept", mode)
		if g.fingerprint != nil {
			s, _ := g.fingerprint(body())
			assert.Equal(t, "mine", s, "%v: the given fingerprint function", mode)
		}
		if mode == throttle.ModeReplay {
			g := guardFor(mode)
			require.NotNil(t, g.fingerprint, "no default fingerprint")
			want, err := idempotencyFingerprint(body())
			require.NoError(t, err)
			got, _ := g.fingerprint(body())
			assert.Equal(t, want, got, "default fingerprint")
		}
	}
}
