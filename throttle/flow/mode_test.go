package flow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestMode: a job says the kind of limiter it decides with, for the
// adapters that skip work only one kind needs.
func TestMode(t *testing.T) {
	st := memstore.New()
	q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "q"})
	require.NoError(t, err)
	l, err := throttle.NewLock(st, throttle.LockConfig{Name: "l", TTL: time.Minute, Mode: throttle.Cooldown})
	require.NoError(t, err)
	require.Equal(t, throttle.ModeReplay, newReplay(t).Mode())
	require.Equal(t, throttle.ModeQuota, Quota(q, throttle.Rate{Limit: 1, Window: time.Second}).Mode())
	require.Equal(t, throttle.Cooldown, Lock(l).Mode())
}
