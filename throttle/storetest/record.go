package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// The checks of store.Recorder, for stores that implement it; the others
// skip them.

// recorder returns s as a store.Recorder, and skips the test when it is not
// one.
func recorder(t *testing.T, s store.Store) store.Recorder {
	t.Helper()
	r, ok := s.(store.Recorder)
	if !ok {
		t.Skipf("%T does not implement store.Recorder", s)
	}
	return r
}

// mustRecord records rec for key and token and fails the test unless the
// store answered want.
func mustRecord(t testing.TB, r store.Recorder, key, token string, rec []byte, want store.Outcome) {
	t.Helper()
	got, err := r.Record(context.Background(), key, token, rec)
	if err != nil {
		t.Fatalf("Record(%q, %d bytes): %v", key, len(rec), err)
	}
	if got != want {
		t.Fatalf("Record(%q, %d bytes) = %v, want %v", key, len(rec), got, want)
	}
}

// mustHaveRecord fails the test unless key's record is exactly want.
func mustHaveRecord(t testing.TB, r store.Recorder, key string, want []byte) {
	t.Helper()
	got, found, err := r.Recorded(context.Background(), key)
	switch {
	case err != nil:
		t.Fatalf("Recorded(%q): %v", key, err)
	case !found:
		t.Fatalf("Recorded(%q) found no record, want %d bytes", key, len(want))
	case !bytes.Equal(got, want):
		t.Fatalf("Recorded(%q) = %q, want %q", key, got, want)
	}
}

// mustHaveNoRecord fails the test unless key has no record.
func mustHaveNoRecord(t testing.TB, r store.Recorder, key, when string) {
	t.Helper()
	got, found, err := r.Recorded(context.Background(), key)
	switch {
	case err != nil:
		t.Fatalf("Recorded(%q) %s: %v", key, when, err)
	case found:
		t.Fatalf("Recorded(%q) %s found %q, want no record", key, when, got)
	case got != nil:
		t.Fatalf("Recorded(%q) %s found no record but returned %q", key, when, got)
	}
}

// allBytes is a record with every byte value, NUL and invalid UTF-8
// included, followed by more than a few kilobytes.
func allBytes() []byte {
	b := make([]byte, 256, 256+8192)
	for i := range b {
		b[i] = byte(i)
	}
	return append(b, bytes.Repeat([]byte("HTTP/1.1 200 OK\r\n"), 8192/17)...)
}

// testRecord: the holder's record reads back byte for byte, an empty one
// included; a new record replaces the old; a held key without a record, and
// a free key, have none.
func testRecord(t *testing.T, s store.Store) {
	r := recorder(t, s)
	ctx := context.Background()
	key := newKey("record")
	tok := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL})
	mustHaveNoRecord(t, r, key, "of a held key that recorded nothing")
	mustHaveNoRecord(t, r, newKey("record-free"), "of a free key")

	rec := allBytes()
	mustRecord(t, r, key, tok, rec, store.OK)
	mustHaveRecord(t, r, key, allBytes())
	mustRecord(t, r, key, tok, []byte{}, store.OK)
	mustHaveRecord(t, r, key, []byte{})
	mustRecord(t, r, key, tok, []byte("second"), store.OK)
	mustHaveRecord(t, r, key, []byte("second"))
	mustBeHeld(t, s, key)

	// A record is the key's own: a neighbour that differs only in its last
	// byte has none.
	mustHaveNoRecord(t, r, key[:len(key)-1]+"\x00", "of a neighbouring key")

	for name, call := range map[string]func() error{
		"Record with an empty key":   func() error { _, err := r.Record(ctx, "", tok, rec); return err },
		"Record with an empty token": func() error { _, err := r.Record(ctx, key, "", rec); return err },
		"Recorded with an empty key": func() error { _, _, err := r.Recorded(ctx, ""); return err },
	} {
		if err := call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want store.ErrInvalid", name, err)
		}
	}
	mustHaveRecord(t, r, key, []byte("second"))
	mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, tok))
}

// testRecordOthers: only the holder records. Another token, and a holder
// whose lease ran out and whose key was taken since, get HeldByOther and
// write nothing; nobody records on a free key (Gone).
func testRecordOthers(t *testing.T, s store.Store) {
	r := recorder(t, s)
	ctx := context.Background()
	key := newKey("record-others")

	mustRecord(t, r, key, store.NewToken(), []byte("nobody holds it"), store.Gone)
	mustHaveNoRecord(t, r, key, "after Record on a free key")

	held := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: held, TTL: longTTL})
	mustRecord(t, r, key, store.NewToken(), []byte("not the holder"), store.HeldByOther)
	mustHaveNoRecord(t, r, key, "after Record by another token")
	mustRecord(t, r, key, held, []byte("the holder's"), store.OK)
	mustRecord(t, r, key, store.NewToken(), []byte("not the holder"), store.HeldByOther)
	mustHaveRecord(t, r, key, []byte("the holder's"))
	mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, held))

	// A's lease runs out and B takes the key: A's late Record must not
	// become B's record, nor replace it.
	key = newKey("record-stale")
	a := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: a, TTL: 50 * time.Millisecond})
	b := waitFree(t, s, key, longTTL)
	mustRecord(t, r, key, a, []byte("stale A"), store.HeldByOther)
	mustHaveNoRecord(t, r, key, "after Record by the expired holder A")
	mustRecord(t, r, key, b, []byte("B"), store.OK)
	mustRecord(t, r, key, a, []byte("stale A"), store.HeldByOther)
	mustHaveRecord(t, r, key, []byte("B"))
	mustOutcome(t, "Release by B", store.OK)(s.Release(ctx, key, b))
	mustRecord(t, r, key, b, []byte("B again"), store.Gone)
	mustHaveNoRecord(t, r, key, "after Record on the released key")
}

// testRecordExpiry: a record expires with its lock. The check does not rely
// on how fast the store is: it waits until the lock is free (taken by a
// newcomer), and the record must be gone by then.
func testRecordExpiry(t *testing.T, s store.Store) {
	r := recorder(t, s)
	key := newKey("record-expiry")
	tok := store.NewToken()
	// The record must be written while the lock lives: a slow store that
	// reaches Record after the short TTL gets Gone, and the check tries
	// again with a longer one.
	ttl := 100 * time.Millisecond
	for {
		mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: ttl})
		out, err := r.Record(context.Background(), key, tok, []byte("expires"))
		if err != nil {
			t.Fatalf("Record: %v", err)
		}
		if out == store.OK {
			break
		}
		if out != store.Gone || ttl >= patience/4 {
			t.Fatalf("Record by the holder of a %v lock = %v, want OK", ttl, out)
		}
		ttl *= 2
	}
	newcomer := waitFree(t, s, key, longTTL)
	mustHaveNoRecord(t, r, key, "once its lock expired and a newcomer took the key")
	mustOutcome(t, "Release by the newcomer", store.OK)(s.Release(context.Background(), key, newcomer))
}

// testRecordRelease: Release deletes the record with the lock, so that a
// holder that gives up leaves nothing to replay and the next holder starts
// without a record. A reentrant key keeps its record while it stays held.
func testRecordRelease(t *testing.T, s store.Store) {
	r := recorder(t, s)
	ctx := context.Background()
	key := newKey("record-release")
	a := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: a, TTL: longTTL})
	mustRecord(t, r, key, a, []byte("A"), store.OK)
	mustOutcome(t, "Release with a wrong token", store.HeldByOther)(s.Release(ctx, key, store.NewToken()))
	mustHaveRecord(t, r, key, []byte("A"))
	mustOutcome(t, "Release by A", store.OK)(s.Release(ctx, key, a))
	mustHaveNoRecord(t, r, key, "after the release")

	b := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: b, TTL: longTTL})
	mustHaveNoRecord(t, r, key, "for the next holder B")
	mustRecord(t, r, key, b, []byte("B"), store.OK)
	mustHaveRecord(t, r, key, []byte("B"))
	mustOutcome(t, "Release by B", store.OK)(s.Release(ctx, key, b))
	mustHaveNoRecord(t, r, key, "after B's release")

	if refuses(s, *reentrant) != nil {
		return
	}
	owner := store.NewToken()
	req := store.Request{Key: key, Token: owner, TTL: longTTL, Reentrant: true}
	mustAcquire(t, s, req)
	mustAcquire(t, s, req)
	mustRecord(t, r, key, store.NewToken(), []byte("not the owner"), store.HeldByOther)
	mustRecord(t, r, key, owner, []byte("owner"), store.OK)
	mustOutcome(t, "first reentrant Release", store.StillHeld)(s.Release(ctx, key, owner))
	mustHaveRecord(t, r, key, []byte("owner"))
	mustOutcome(t, "last reentrant Release", store.OK)(s.Release(ctx, key, owner))
	mustHaveNoRecord(t, r, key, "after the last reentrant release")
}

// testRecordNotifies: Record wakes the key's watchers as a release does, so
// that a duplicate waiting for the original reads its record at once.
func testRecordNotifies(t *testing.T, s store.Store) {
	r := recorder(t, s)
	n, ok := s.(store.Notifier)
	if !ok {
		t.Skipf("%T does not implement store.Notifier", s)
	}
	ctx := context.Background()
	key := newKey("record-notifies")
	tok := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL})

	ch, stop, err := n.Watch(ctx, key)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer stop()
	mustRecord(t, r, key, tok, []byte("done"), store.OK)
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("no notification within %v of the record", patience)
	}
	mustHaveRecord(t, r, key, []byte("done"))
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, tok))
}
