package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

func testNotifier(t *testing.T, s store.Store) {
	n, ok := s.(store.Notifier)
	if !ok {
		t.Skipf("%T does not implement store.Notifier", s)
	}
	ctx := context.Background()
	key := newKey("notifier")
	tok := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL})

	ch, stop, err := n.Watch(ctx, key)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer stop()
	mustOutcome(t, "Release by the holder", store.OK)(s.Release(ctx, key, tok))
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("no notification within %v of the release", patience)
	}
	stop()
	stop() // must be safe to call twice
}
