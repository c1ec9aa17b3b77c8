package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// mustDelete fails the test unless Delete(keys...) succeeds.
func mustDelete(t testing.TB, s store.Store, keys ...string) {
	t.Helper()
	require.NoError(t, s.Delete(bg, keys...), "Delete(%q)", keys)
}

// testDelete: Delete frees held keys at once, whoever holds them: a
// newcomer takes each, and the old holder's Release and Extend find the
// key another's, or gone; no keys, or missing ones, are no error.
func testDelete(t *testing.T, s store.Store) {
	mustDelete(t, s)
	mustDelete(t, s, newKey("delete-missing"))
	keys, old := []string{newKey("delete"), newKey("delete")}, storekit.NewToken()
	for _, key := range keys {
		acquire(t, s, lock(key, old), true)
	}
	mustDelete(t, s, keys...)
	tok := storekit.NewToken()
	acquire(t, s, lock(keys[0], tok), true)
	mustOutcome(t, "Release by the holder before Delete", store.HeldByOther)(s.Release(bg, keys[0], old))
	mustOutcome(t, "Extend by the holder before Delete", store.HeldByOther)(s.Extend(bg, keys[0], old, longTTL))
	mustOutcome(t, "Release by the newcomer", store.OK)(s.Release(bg, keys[0], tok))
	mustOutcome(t, "Release of a deleted key", store.Gone)(s.Release(bg, keys[1], old))
	mustBeFree(t, s, keys[1])

	if refuses(s, reentrant) == nil {
		req := store.Request{Key: newKey("delete-reentrant"), Token: old, TTL: longTTL, Reentrant: true}
		acquire(t, s, req, true)
		acquire(t, s, req, true)
		mustDelete(t, s, req.Key)
		mustBeFree(t, s, req.Key)
		g := acquire(t, s, req, true)
		require.Equal(t, 1, g.Holds, "a re-entry after Delete: %+v", g)
		mustOutcome(t, "Release of the new hold", store.OK)(s.Release(bg, req.Key, old))
	}
}

// testDeleteFence: the fences of a key keep increasing across a Delete.
func testDeleteFence(t *testing.T, s store.Store) {
	key, last := newKey("delete-fence"), int64(0)
	for i := range 3 {
		req := store.Request{Key: key, Token: storekit.NewToken(), TTL: longTTL, Fence: true}
		g := acquire(t, s, req, true)
		require.Greater(t, g.Fence, last, "fence of hold %d, after a Delete", i)
		last = g.Fence
		mustDelete(t, s, key)
	}
}

// testDeleteRecord: Delete removes a held key's record with it.
func testDeleteRecord(t *testing.T, s store.Store) {
	r := as[store.Recorder](t, s)
	key, tok := newKey("delete-record"), storekit.NewToken()
	acquire(t, s, lock(key, tok), true)
	mustRecord(t, r, key, tok, []byte("done"), store.OK)
	mustDelete(t, s, key)
	mustHaveRecord(t, r, key, nil)
	mustBeFree(t, s, key)
}

// testDeleteQuota: Delete fills a spent quota again.
func testDeleteQuota(t *testing.T, s store.Store) {
	q := as[store.Quota](t, s)
	keys, r := quotaKeys("delete-quota", 2), hourly(3)
	limits := []store.Limit{{Key: keys[0], Rate: r}, {Key: keys[1], Rate: r}}
	ds := allowAll(t, q, limits, 3)
	require.True(t, ds[0].Allowed && ds[1].Allowed && ds[0].Remaining == 0, "%+v", ds)
	mustDelete(t, s, keys...)
	mustRemain(t, q, keys[0], r, 3)
	mustRemain(t, q, keys[1], r, 3)
}

// testDeleteNotify: Delete wakes the key's watchers.
func testDeleteNotify(t *testing.T, s store.Store) {
	n := as[store.Notifier](t, s)
	key := newKey("delete-notify")
	acquire(t, s, lock(key, storekit.NewToken()), true)
	watchThen(t, n, key, "delete", func() { mustDelete(t, s, key) })
	mustBeFree(t, s, key)
}

// testDeleteHolders: Delete frees every place of a key with several
// holders; the old holders find their places gone.
func testDeleteHolders(t *testing.T, s store.Store) {
	key := newKey("delete-holders")
	toks := []string{storekit.NewToken(), storekit.NewToken(), storekit.NewToken()}
	for _, tok := range toks {
		acquire(t, s, place(key, tok, longTTL), true)
	}
	acquire(t, s, place(key, storekit.NewToken(), longTTL), false)
	mustDelete(t, s, key)
	for range places {
		acquire(t, s, place(key, storekit.NewToken(), longTTL), true)
	}
	mustOutcome(t, "Release by a holder before Delete", store.Gone)(s.Release(bg, key, toks[0]))
	mustDelete(t, s, key)
	mustBeFree(t, s, key)
}
