package throttle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestLeaseKeyAndToken checks the key and token an acquisition builds
// together in one string: the key is the policy's stored key of the id,
// also for ids too long for the stack buffer, and every acquisition gets a
// token of its own.
func TestLeaseKeyAndToken(t *testing.T) {
	ctx := context.Background()
	l, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit", Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range []string{"42", "a:b{c}", strings.Repeat("x", 60), strings.Repeat("y", 500)} {
		lease, err := l.Acquire(ctx, id)
		if err != nil {
			t.Fatalf("Acquire(%q): %v", id, err)
		}
		if lease.Key() != l.StoredKey(id) {
			t.Errorf("Acquire(%q): key %q, want %q", id, lease.Key(), l.StoredKey(id))
		}
		if tok := lease.Token(); len(tok) != 31 || seen[tok] || strings.Contains(lease.Key(), tok) {
			t.Errorf("Acquire(%q): token %q: want 31 bytes, new, and not in the key", id, tok)
		}
		seen[lease.Token()] = true
	}
}
