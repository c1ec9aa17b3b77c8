package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

func testCancelledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	key := newKey("cancelled")
	tok := store.NewToken()
	done := make(chan struct{})
	var errs [3]error
	go func() {
		defer close(done)
		_, errs[0] = s.Acquire(ctx, store.Request{Key: key, Token: tok, TTL: longTTL})
		_, errs[1] = s.Release(ctx, key, tok)
		_, errs[2] = s.Extend(ctx, key, tok, longTTL)
	}()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("store calls with a cancelled context did not return within %v", patience)
	}
	for i, op := range []string{"Acquire", "Release", "Extend"} {
		if errs[i] == nil {
			t.Errorf("%s with a cancelled context returned no error", op)
		} else if !errors.Is(errs[i], context.Canceled) {
			t.Logf("%s with a cancelled context: %v (not context.Canceled; allowed)", op, errs[i])
		}
	}
	// Whatever a store did with the cancelled call, the key must not be
	// stuck: the next acquisition with a live context works or the key
	// expires. Clean up a lock that a store took anyway.
	_, _ = s.Release(context.Background(), key, tok)
}

// oddKeys returns raw keys (not built by store.Key) that a store must
// treat like any other: binary bytes, separators and braces, and 4 KiB of
// length. Each starts with a hash tag of its own, so that the key and its
// sibling keys stay in one Redis Cluster slot whatever follows.
func oddKeys() map[string]string {
	tag := "storetest:{" + store.NewToken() + "}"
	return map[string]string{
		"binary":     tag + "\x00\x01\xfe\xff\r\n\t \"'\\%",
		"separators": tag + ":a:{b}:}{:{}:" + "::",
		"long":       tag + strings.Repeat("k", 4096),
		"utf8":       tag + "ключ-鍵-🔑",
	}
}

func testOddKeys(t *testing.T, s store.Store) {
	for name, key := range oddKeys() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tok := store.NewToken()
			g := mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL, Fence: fences(s)})
			if fences(s) && g.Fence <= 0 {
				t.Fatalf("Fence = %d, want positive", g.Fence)
			}
			mustBeHeld(t, s, key)
			mustOutcome(t, "Extend", store.OK)(s.Extend(ctx, key, tok, longTTL))
			mustOutcome(t, "Release with a wrong token", store.HeldByOther)(s.Release(ctx, key, store.NewToken()))
			mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, tok))
			mustBeFree(t, s, key)
			// A neighbour that differs only in its last byte is another key.
			other := key[:len(key)-1] + "\x00"
			mustBeFree(t, s, other)
		})
	}
}
