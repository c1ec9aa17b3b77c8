package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// Run runs the conformance suite against the stores newStore makes, each
// check a subtest: acquisition, token-checked release and extend, expiry,
// contention, fences, retries, reentrancy, cancelled contexts, odd keys,
// keys with several holders (Request.Holders), Delete, and Notifier,
// Recorder and Quota (AllowAll, strict rates) when the store implements
// them. newStore
// gets the subtest's t; every check uses fresh keys, so it may return a
// shared store.
// A store with a method Refuses(store.Request) error (see package store) has
// the checks that need what it refuses skipped, and the refusal checked.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			require.NotNil(t, s, "storetest: newStore returned nil")
			if err := refuses(s, c.needs); err != nil {
				t.Skipf("%T refuses what this check needs: %v", s, err)
			}
			c.run(t, s)
		})
	}
}

var none, fenced, reentrant = store.Request{}, store.Request{Fence: true}, store.Request{Reentrant: true}

// cases lists the checks, simple ones first, and the request each needs.
var cases = []struct {
	name  string
	run   func(t *testing.T, s store.Store)
	needs store.Request
}{
	{"acquire", testAcquire, none},
	{"release-extend", testReleaseExtend, none},
	{"token-safety", testTokenSafety, none},
	{"contention", testContention, none},
	{"fence", testFence, fenced},
	{"own-token-retry", testOwnTokenRetry, none},
	{"reentrant", testReentrant, reentrant},
	{"reentry-ttl", testReentryTTL, reentrant},
	{"notifier", testNotifier, none},
	{"cancelled-context", testCancelledContext, none},
	{"odd-keys", testOddKeys, none},
	{"refusals", testRefusals, none},
	{"record", testRecord, none},
	{"record-others", testRecordOthers, none},
	{"record-release", testRecordRelease, none},
	{"record-retention", testRecordRetention, none},
	{"allow-all", testAllowAll, none},
	{"allow-all-one", testAllowAllOne, none},
	{"allow-all-invalid", testAllowAllInvalid, none},
	{"allow-all-race", testAllowAllRace, none},
	{"strict", testStrict, none},
	{"strict-allow-all", testStrictAllowAll, none},
	{"strict-race", testStrictRace, none},
	{"delete", testDelete, none},
	{"delete-fence", testDeleteFence, fenced},
	{"delete-record", testDeleteRecord, none},
	{"delete-quota", testDeleteQuota, none},
	{"delete-notify", testDeleteNotify, none},
	{"holders", testHolders, holders},
	{"holders-expiry", testHoldersExpiry, holders},
	{"holders-extend", testHoldersExtend, holders},
	{"holders-contention", testHoldersContention, holders},
	{"holders-fence", testHoldersFence, fencedHolders},
	{"holders-invalid", testHoldersInvalid, none},
	{"delete-holders", testDeleteHolders, holders},
}

// refuses returns what s's Refuses method (see Run) says of req, if any.
func refuses(s store.Store, req store.Request) error {
	r, ok := s.(interface{ Refuses(store.Request) error })
	if !ok {
		return nil
	}
	req.Key, req.Token, req.TTL = "storetest:{refuses}", "storetest", time.Second
	return r.Refuses(req)
}

func fences(s store.Store) bool { return refuses(s, fenced) == nil }

const (
	patience = 3 * time.Second // the most a check waits for an expiry or a notification
	longTTL  = time.Minute     // the TTL of locks that must not expire during a check
)

var bg = context.Background()

// newKey returns a fresh key, so that checks sharing a store never meet.
func newKey(name string) string { return storekit.Key("storetest", name, storekit.NewToken()) }

func lock(key, tok string) store.Request { return store.Request{Key: key, Token: tok, TTL: longTTL} }

// acquire fails the test unless the store answers req, granted or not.
func acquire(t testing.TB, s store.Store, req store.Request, granted bool) store.Grant {
	t.Helper()
	g, err := s.Acquire(bg, req)
	require.NoError(t, err, "Acquire(%q)", req.Key)
	require.Equal(t, granted, g.Acquired, "Acquire(%+v): %+v", req, g)
	return g
}

// mustBeHeld fails the test unless a newcomer is refused key: how long for.
func mustBeHeld(t testing.TB, s store.Store, key string) time.Duration {
	t.Helper()
	return acquire(t, s, lock(key, storekit.NewToken()), false).Remaining
}

// mustBeFree fails the test unless a newcomer can take key, and releases it.
func mustBeFree(t testing.TB, s store.Store, key string) {
	t.Helper()
	tok := storekit.NewToken()
	acquire(t, s, lock(key, tok), true)
	mustOutcome(t, "Release by the newcomer", store.OK)(s.Release(bg, key, tok))
}

// waitFree polls key until a newcomer takes it, and returns its token.
func waitFree(t testing.TB, s store.Store, key string) string {
	t.Helper()
	tok := storekit.NewToken()
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		g, err := s.Acquire(bg, lock(key, tok))
		require.NoError(t, err, "Acquire(%q)", key)
		if g.Acquired {
			return tok
		}
		require.True(t, time.Now().Before(deadline), "key %q still held after %v (%v remaining)", key, patience, g.Remaining)
	}
}

// mustOutcome returns a checker of a call's (Outcome, error).
func mustOutcome(t testing.TB, what string, want store.Outcome) func(store.Outcome, error) {
	return func(got store.Outcome, err error) {
		t.Helper()
		require.NoError(t, err, what)
		require.Equal(t, want, got, what)
	}
}
