package storetest

import (
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Run runs the conformance suite against the stores that newStore makes,
// each check as a named subtest (run one with go test -run
// 'Conformance/release'). newStore is called once per subtest with the
// subtest's t; it may return the same store every time.
//
// A store that cannot serve every kind of request (a quorum store has no
// sound fencing tokens) says so with a method
//
//	Refuses(req store.Request) error
//
// returning the error its Acquire gives, without a store call, for
// requests like req (matching store.ErrInvalid), and nil for those it
// takes. Run then skips the checks that need what it refuses, runs those
// that only use it in passing without it, and checks the refusal.
//
// The checks of an optional interface (store.Notifier, store.Recorder) are
// skipped for a store that does not implement it.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("storetest: newStore returned nil")
			}
			if c.needs != nil {
				if err := refuses(s, *c.needs); err != nil {
					t.Skipf("%T refuses what this check needs: %v", s, err)
				}
			}
			c.run(t, s)
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s store.Store)
	// needs, when set, is a kind of request the check cannot do without;
	// it is skipped for a store that refuses it.
	needs *store.Request
}

var (
	fenced    = &store.Request{Fence: true}
	reentrant = &store.Request{Reentrant: true}
)

// refuses returns the error s gives for requests like req when s has a
// Refuses method (see Run), and nil otherwise.
func refuses(s store.Store, req store.Request) error {
	r, ok := s.(interface{ Refuses(store.Request) error })
	if !ok {
		return nil
	}
	req.Key, req.Token, req.TTL = "storetest:{refuses}", "storetest", time.Second
	return r.Refuses(req)
}

// fences reports whether s takes fenced requests.
func fences(s store.Store) bool { return refuses(s, *fenced) == nil }

// cases lists the checks in the order they run. The simple ones come first,
// so that a broken store fails where the failure is easiest to read.
var cases = []testCase{
	{"acquire-free", testAcquireFree, nil},
	{"acquire-held", testAcquireHeld, nil},
	{"release", testRelease, nil},
	{"extend", testExtend, nil},
	{"expiry", testExpiry, nil},
	{"token-safety", testTokenSafety, nil},
	{"contention", testContention, nil},
	{"fence", testFence, fenced},
	{"own-token-retry", testOwnTokenRetry, nil},
	{"reentrant", testReentrant, reentrant},
	{"reentry-ttl", testReentryTTL, reentrant},
	{"notifier", testNotifier, nil},
	{"cancelled-context", testCancelledContext, nil},
	{"odd-keys", testOddKeys, nil},
	{"refusals", testRefusals, nil},
	{"record", testRecord, nil},
	{"record-others", testRecordOthers, nil},
	{"record-expiry", testRecordExpiry, nil},
	{"record-release", testRecordRelease, nil},
	{"record-notifies", testRecordNotifies, nil},
}
