package storetest

import (
	"testing"

	"github.com/go-throttle/throttle/throttle/store"
)

// Run runs the conformance suite against the stores that newStore makes,
// each check as a named subtest (run one with go test -run
// 'Conformance/release'). newStore is called once per subtest with the
// subtest's t; it may return the same store every time.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("storetest: newStore returned nil")
			}
			c.run(t, s)
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// cases lists the checks in the order they run. The simple ones come first,
// so that a broken store fails where the failure is easiest to read.
var cases = []testCase{
	{"acquire-free", testAcquireFree},
	{"acquire-held", testAcquireHeld},
	{"release", testRelease},
	{"extend", testExtend},
	{"expiry", testExpiry},
	{"token-safety", testTokenSafety},
	{"contention", testContention},
	{"fence", testFence},
	{"own-token-retry", testOwnTokenRetry},
	{"reentrant", testReentrant},
	{"reentry-ttl", testReentryTTL},
	{"notifier", testNotifier},
	{"cancelled-context", testCancelledContext},
	{"odd-keys", testOddKeys},
}
