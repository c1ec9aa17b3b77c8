package redisstore_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// TestScriptSHA checks that the SHA1 EVALSHA sends for each embedded script
// is the one Redis computes for it, so that EVALSHA finds the script that
// SCRIPT LOAD or an EVAL fallback cached.
func TestScriptSHA(t *testing.T) {
	_, _, c := newStore(t)
	ctx := context.Background()
	for name, s := range redisstore.Scripts() {
		src, sha := s[0], s[1]
		sum := sha1.Sum([]byte(src))
		if got := hex.EncodeToString(sum[:]); got != sha {
			t.Errorf("%s: go-redis hash %s, sha1 of source %s", name, sha, got)
		}
		loaded, err := c.ScriptLoad(ctx, src).Result()
		require.NoError(t, err, "%s: SCRIPT LOAD", name)
		assert.EqualValues(t, sha, loaded, "%s: SCRIPT LOAD returned %s, EVALSHA sends %s", name, loaded, sha)
	}
}

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
