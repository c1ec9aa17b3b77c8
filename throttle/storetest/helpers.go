package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// patience bounds every wait of the suite for something that happens in the
// background: an expiry, a notification. It is generous on purpose (the suite
// asserts what happens, never how fast), so a store only fails it when the
// thing does not happen at all.
const patience = 3 * time.Second

// longTTL is the TTL of locks that must not expire while a check runs.
const longTTL = time.Minute

// newKey returns a fresh key for name, built with store.Key under the
// policy name and a random identity, so that checks and test runs sharing
// one store never see each other's keys.
func newKey(name string) string {
	return store.Key("storetest", name, store.NewToken())
}

// mustAcquire acquires req and fails the test unless the store granted it.
func mustAcquire(t testing.TB, s store.Store, req store.Request) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", req.Key, err)
	}
	if !g.Acquired {
		t.Fatalf("Acquire(%q) of a free key was refused: %+v", req.Key, g)
	}
	return g
}

// mustBeHeld fails the test unless a newcomer with a fresh token is refused
// key, and returns how long the store says the holder keeps it.
func mustBeHeld(t testing.TB, s store.Store, key string) time.Duration {
	t.Helper()
	g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: store.NewToken(), TTL: longTTL})
	if err != nil {
		t.Fatalf("Acquire(%q) by a contender: %v", key, err)
	}
	if g.Acquired {
		t.Fatalf("Acquire(%q) by a contender succeeded while the key should be held", key)
	}
	return g.Remaining
}

// mustBeFree fails the test unless a newcomer can acquire key at once; it
// releases the key again before returning.
func mustBeFree(t testing.TB, s store.Store, key string) {
	t.Helper()
	tok := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL})
	mustOutcome(t, "Release by the newcomer", store.OK)(s.Release(context.Background(), key, tok))
}

// waitFree polls key until a newcomer can acquire it, for at most patience,
// and fails the test when it never becomes free. The newcomer keeps the key
// for ttl and its token is returned.
func waitFree(t testing.TB, s store.Store, key string, ttl time.Duration) string {
	t.Helper()
	tok := store.NewToken()
	deadline := time.Now().Add(patience)
	for {
		g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: tok, TTL: ttl})
		if err != nil {
			t.Fatalf("Acquire(%q): %v", key, err)
		}
		if g.Acquired {
			return tok
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %q still held after %v (store says %v remaining)", key, patience, g.Remaining)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mustOutcome returns a checker for an (Outcome, error) pair, so that a call
// can be checked in one line: mustOutcome(t, what, want)(s.Release(...)).
func mustOutcome(t testing.TB, what string, want store.Outcome) func(store.Outcome, error) {
	return func(got store.Outcome, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}
