package guard

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestInputs checks that only a Quota keeps a cost function: the other
// modes never call it.
func TestInputs(t *testing.T) {
	cost := WithCost(func(*http.Request) (int, error) { return 2, nil })
	st := memstore.New()
	q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "p"})
	require.NoError(t, err)
	assert.NotNil(t, Quota(q, throttle.Rate{Limit: 10, Window: time.Minute}, cost).cost, "Quota: cost kept")
	r, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "r"}) // a name is one policy's
	require.NoError(t, err)
	assert.Nil(t, Replay(r, cost).cost, "Replay: cost kept")
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown, throttle.Exclusive} {
		l, err := throttle.NewLock(st, throttle.LockConfig{Name: mode.String(), Mode: mode})
		require.NoError(t, err)
		assert.Nil(t, Lock(l, cost).cost, "%v: cost kept", mode)
	}
}
