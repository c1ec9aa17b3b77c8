package redisstore_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestHoldersExtremeTTL: a place asked for the longest TTL is kept for a
// hundred years, whole milliseconds the scripts can compute with.
func TestHoldersExtremeTTL(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	const century = 100 * 365 * 24 * time.Hour
	k := key(t)
	req := placeReq(k, time.Duration(math.MaxInt64))
	g := mustAcquire(t, s, req)
	require.True(t, g.TTL > century && g.TTL < 2*century, "grant %+v", g)
	mustOutcome(t, store.OK)(s.Extend(ctx, k, req.Token, time.Duration(math.MaxInt64)))
	pttl, err := c.PTTL(ctx, k).Result()
	require.NoError(t, err)
	require.True(t, pttl > century && pttl < 2*century, "PTTL %v", pttl)
	mustOutcome(t, store.OK)(s.Release(ctx, k, req.Token))
}
