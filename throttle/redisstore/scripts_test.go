package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// TestNoScriptFallback flushes the script cache between calls: EVALSHA gets
// NOSCRIPT and the store must fall back to EVAL instead of failing.
func TestNoScriptFallback(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	for i := range 3 {
		require.NoError(t, c.ScriptFlush(ctx).Err())
		req := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute, Fence: i%2 == 0}
		g, err := s.Acquire(ctx, req)
		require.NoError(t, err, "acquire after SCRIPT FLUSH: %+v, %v", g, err)
		require.True(t, g.Acquired, "acquire after SCRIPT FLUSH: %+v, %v", g, err)
		require.NoError(t, c.ScriptFlush(ctx).Err())
		if out, err := s.Release(ctx, req.Key, req.Token); err != nil || out != store.OK {
			t.Fatalf("release after SCRIPT FLUSH: %v, %v", out, err)
		}
	}
}
