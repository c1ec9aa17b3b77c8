package throttle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestLeaseKeyAndToken checks the key and token an acquisition builds
// together in one string: the key is the lock's stored key of the id, also
// for ids too long for the stack buffer, and every acquisition gets a token
// of its own: a process-wide counter (11 bytes) when the key is held only
// in this process's memory, a token unique across processes (31 bytes,
// storekit.NewToken) when it may reach another store (FailOver).
func TestLeaseKeyAndToken(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		opts     throttle.Options
		tokenLen int
	}{
		{"memory", throttle.Options{}, 11},
		{"fail over", throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: memstore.New()}, 31},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkKeyAndToken(t, ctx, newLock(t, memstore.New(), throttle.LockConfig{Name: "submit", TTL: time.Minute, Options: c.opts}), c.tokenLen)
		})
	}
}

// checkKeyAndToken is TestLeaseKeyAndToken for l, whose tokens are
// tokenLen bytes long.
func checkKeyAndToken(t *testing.T, ctx context.Context, l *throttle.Lock, tokenLen int) {
	seen := map[string]bool{}
	for _, id := range []string{"42", "a:b{c}", strings.Repeat("x", 60), strings.Repeat("y", 500)} {
		lease, err := l.Acquire(ctx, id)
		require.NoError(t, err, "Acquire(%q)", id)
		assert.Equal(t, l.StoredKey(id), lease.Key(), "Acquire(%q): key", id)
		tok := lease.Token()
		assert.Len(t, tok, tokenLen, "Acquire(%q): token %q", id, tok)
		assert.False(t, seen[tok], "Acquire(%q): token %q made twice", id, tok)
		assert.NotContains(t, lease.Key(), tok, "Acquire(%q): token in the key", id)
		seen[tok] = true
	}
}
