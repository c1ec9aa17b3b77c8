package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// as returns s as a T, and skips the test when it is not one.
func as[T any](t *testing.T, s store.Store) T {
	v, ok := s.(T)
	if !ok {
		t.Skipf("%T does not implement %T", s, (*T)(nil))
	}
	return v
}

// watchThen fails the test unless a watch of key fires soon after do runs.
func watchThen(t *testing.T, n store.Notifier, key, what string, do func()) {
	t.Helper()
	ch, stop, err := n.Watch(bg, key)
	require.NoError(t, err, "Watch")
	defer stop()
	do()
	select {
	case <-ch:
	case <-time.After(patience):
		require.Fail(t, "no notification", "within %v of the %s", patience, what)
	}
	stop() // and again, deferred: it must be safe to call twice
}

// testNotifier: a Release wakes the key's watchers, and so does a Record.
func testNotifier(t *testing.T, s store.Store) {
	n := as[store.Notifier](t, s)
	key, tok := newKey("notifier"), storekit.NewToken()
	acquire(t, s, lock(key, tok), true)
	if r, ok := s.(store.Recorder); ok {
		watchThen(t, n, key, "record", func() { mustRecord(t, r, key, tok, []byte("done"), store.OK) })
		mustHaveRecord(t, r, key, []byte("done"))
		mustBeHeld(t, s, key)
	}
	watchThen(t, n, key, "release", func() {
		mustOutcome(t, "Release by the holder", store.OK)(s.Release(bg, key, tok))
	})
}

func mustRecord(t testing.TB, r store.Recorder, key, token string, rec []byte, want store.Outcome) {
	t.Helper()
	mustOutcome(t, "Record("+key+")", want)(r.Record(bg, key, token, rec, longTTL))
}

// mustHaveRecord fails the test unless key's record is want (nil: none).
func mustHaveRecord(t testing.TB, r store.Recorder, key string, want []byte) {
	t.Helper()
	got, found, err := r.Recorded(bg, key)
	require.NoError(t, err, "Recorded(%q)", key)
	require.True(t, found == (want != nil) && bytes.Equal(want, got) && (found || got == nil),
		"Recorded(%q) = %q, found %v; want %q (nil: none)", key, got, found, want)
}

// testRecord: the holder's record, empty or not, reads back byte for byte
// and replaces the last; other keys have none.
func testRecord(t *testing.T, s store.Store) {
	r := as[store.Recorder](t, s)
	key, tok := newKey("record"), storekit.NewToken()
	acquire(t, s, lock(key, tok), true)
	mustHaveRecord(t, r, key, nil)
	mustHaveRecord(t, r, newKey("record-free"), nil)
	all := bytes.Repeat([]byte("HTTP/1.1 200 OK\r\n"), 8192/17) // more than a few KiB and every byte value
	for i := range 256 {
		all = append(all, byte(i))
	}
	for _, rec := range [][]byte{all, {}, []byte("second")} {
		mustRecord(t, r, key, tok, bytes.Clone(rec), store.OK)
		mustHaveRecord(t, r, key, rec)
	}
	mustBeHeld(t, s, key)
	mustHaveRecord(t, r, key[:len(key)-1]+"\x00", nil)
	_, err := r.Record(bg, "", tok, all, longTTL)
	require.ErrorIs(t, err, store.ErrInvalid, "Record with an empty key")
	_, err = r.Record(bg, key, "", all, longTTL)
	require.ErrorIs(t, err, store.ErrInvalid, "Record with an empty token")
	_, err = r.Record(bg, key, tok, all, 0)
	require.ErrorIs(t, err, store.ErrInvalid, "Record with a zero ttl")
	_, _, err = r.Recorded(bg, "")
	require.ErrorIs(t, err, store.ErrInvalid, "Recorded with an empty key")
	mustHaveRecord(t, r, key, []byte("second"))
	mustOutcome(t, "Release", store.OK)(s.Release(bg, key, tok))
}

// testRecordOthers: only the holder records: another token and a lapsed
// holder get HeldByOther, anybody on a free key Gone, and write nothing; a
// record expires with its lock.
func testRecordOthers(t *testing.T, s store.Store) {
	r := as[store.Recorder](t, s)
	key, held := newKey("record-others"), storekit.NewToken()
	mustRecord(t, r, key, storekit.NewToken(), []byte("nobody holds it"), store.Gone)
	mustHaveRecord(t, r, key, nil)
	acquire(t, s, lock(key, held), true)
	mustRecord(t, r, key, storekit.NewToken(), []byte("not the holder"), store.HeldByOther)
	mustHaveRecord(t, r, key, nil)
	mustRecord(t, r, key, held, []byte("the holder's"), store.OK)
	mustRecord(t, r, key, storekit.NewToken(), []byte("not the holder"), store.HeldByOther)
	mustHaveRecord(t, r, key, []byte("the holder's"))
	mustOutcome(t, "Release", store.OK)(s.Release(bg, key, held))

	// A's lease runs out and B takes the key without A's record: A's late
	// Record must not become B's record, nor replace it.
	key, a := newKey("record-stale"), storekit.NewToken()
	// A slow store may reach Record after a short TTL (Gone): try longer.
	for ttl := 100 * time.Millisecond; ; ttl *= 2 {
		acquire(t, s, store.Request{Key: key, Token: a, TTL: ttl}, true)
		out, err := r.Record(bg, key, a, []byte("A"), ttl)
		require.NoError(t, err, "Record")
		if out == store.OK {
			break
		}
		require.True(t, out == store.Gone && ttl < patience/4, "Record by the holder of a %v lock = %v, want OK", ttl, out)
	}
	b := waitFree(t, s, key)
	mustRecord(t, r, key, a, []byte("stale A"), store.HeldByOther)
	mustHaveRecord(t, r, key, nil)
	mustRecord(t, r, key, b, []byte("B"), store.OK)
	mustRecord(t, r, key, a, []byte("stale A"), store.HeldByOther)
	mustHaveRecord(t, r, key, []byte("B"))
	mustOutcome(t, "Release by B", store.OK)(s.Release(bg, key, b))
	mustRecord(t, r, key, b, []byte("B again"), store.Gone)
	mustHaveRecord(t, r, key, nil)
}

// testRecordRelease: the last Release deletes the record with the lock.
func testRecordRelease(t *testing.T, s store.Store) {
	r := as[store.Recorder](t, s)
	key := newKey("record-release")
	for _, name := range []string{"A", "B"} {
		tok := storekit.NewToken()
		acquire(t, s, lock(key, tok), true)
		mustHaveRecord(t, r, key, nil)
		mustRecord(t, r, key, tok, []byte(name), store.OK)
		mustOutcome(t, "Release with a wrong token", store.HeldByOther)(s.Release(bg, key, storekit.NewToken()))
		mustHaveRecord(t, r, key, []byte(name))
		mustOutcome(t, "Release by "+name, store.OK)(s.Release(bg, key, tok))
		mustHaveRecord(t, r, key, nil)
	}
	if refuses(s, reentrant) != nil {
		return
	}
	owner := storekit.NewToken()
	req := store.Request{Key: key, Token: owner, TTL: longTTL, Reentrant: true}
	acquire(t, s, req, true)
	acquire(t, s, req, true)
	mustRecord(t, r, key, storekit.NewToken(), []byte("not the owner"), store.HeldByOther)
	mustRecord(t, r, key, owner, []byte("owner"), store.OK)
	mustOutcome(t, "first reentrant Release", store.StillHeld)(s.Release(bg, key, owner))
	mustHaveRecord(t, r, key, []byte("owner"))
	mustOutcome(t, "last reentrant Release", store.OK)(s.Release(bg, key, owner))
	mustHaveRecord(t, r, key, nil)
}

// testRecordRetention: Record gives a key held under a short lease, and its
// record, the ttl it is passed (a Replay's retention), in one step, as seen
// by a contender's Remaining; a Record refused changes no expiry.
func testRecordRetention(t *testing.T, s store.Store) {
	r := as[store.Recorder](t, s)
	const lease = 200 * time.Millisecond
	key, tok := newKey("record-retention"), storekit.NewToken()
	acquire(t, s, store.Request{Key: key, Token: tok, TTL: lease}, true)
	mustRecord(t, r, key, storekit.NewToken(), []byte("not the holder"), store.HeldByOther)
	require.LessOrEqual(t, mustBeHeld(t, s, key), lease, "Remaining after a refused Record")
	mustRecord(t, r, key, tok, []byte("answer"), store.OK)
	left := mustBeHeld(t, s, key)
	require.True(t, left > longTTL-patience && left <= longTTL,
		"Remaining %v after a Record with ttl %v, on a key held for %v", left, longTTL, lease)
	time.Sleep(2 * lease) // the lease the key was taken with runs out
	mustBeHeld(t, s, key)
	mustHaveRecord(t, r, key, []byte("answer"))
	mustOutcome(t, "Release", store.OK)(s.Release(bg, key, tok))
	mustHaveRecord(t, r, key, nil)
}
