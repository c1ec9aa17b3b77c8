package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

func testNotifier(t *testing.T, s throttle.Store) {
	n, ok := s.(throttle.Notifier)
	if !ok {
		t.Skipf("%T does not implement throttle.Notifier", s)
	}
	ctx := context.Background()
	key := NewKey("notifier")
	tok := throttle.NewToken()
	MustAcquire(t, s, throttle.AcquireRequest{Key: key, Token: tok, TTL: longTTL})

	ch, stop, err := n.Watch(ctx, key)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer stop()
	mustOutcome(t, "Release by the holder", throttle.OutcomeOK)(s.Release(ctx, key, tok))
	select {
	case <-ch:
	case <-time.After(Patience):
		t.Fatalf("no notification within %v of the release", Patience)
	}
	stop()
	stop() // must be safe to call twice
}
