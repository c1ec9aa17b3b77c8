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
// of its own.
func TestLeaseKeyAndToken(t *testing.T) {
	ctx := context.Background()
	l := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit", TTL: time.Minute})
	seen := map[string]bool{}
	for _, id := range []string{"42", "a:b{c}", strings.Repeat("x", 60), strings.Repeat("y", 500)} {
		lease, err := l.Acquire(ctx, id)
		require.NoError(t, err, "Acquire(%q)", id)
		assert.Equal(t, l.StoredKey(id), lease.Key(), "Acquire(%q): key", id)
		tok := lease.Token()
		assert.Len(t, tok, 31, "Acquire(%q): token %q", id, tok)
		assert.False(t, seen[tok], "Acquire(%q): token %q made twice", id, tok)
		assert.NotContains(t, lease.Key(), tok, "Acquire(%q): token in the key", id)
		seen[tok] = true
	}
}
