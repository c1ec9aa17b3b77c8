package memstore

import (
	"bytes"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// checkRecordBytes fails the test unless every shard's recordBytes is the
// sum of its records' lengths, and returns the number of records.
func (s *Store) checkRecordBytes(t *testing.T) int {
	t.Helper()
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		var sum int64
		for _, r := range sh.records {
			sum += int64(len(r.data))
		}
		n += len(sh.records)
		got := sh.recordBytes
		sh.mu.Unlock()
		if got != sum {
			t.Fatalf("shard %d counts %d record bytes, its records hold %d", i, got, sum)
		}
	}
	return n
}

func recorded(t *testing.T, s *Store, key string) ([]byte, bool) {
	t.Helper()
	rec, found, err := s.Recorded(bg, key)
	if err != nil {
		t.Fatalf("Recorded(%q): %v", key, err)
	}
	if !found && rec != nil {
		t.Fatalf("Recorded(%q) found nothing but returned %q", key, rec)
	}
	return rec, found
}

func TestRecordKeepsACopy(t *testing.T) {
	s := New()
	acquire(t, s, "k", "a", time.Minute)
	rec := []byte("HTTP/1.1 201\x00body")
	outcome(t, store.OK)(s.Record(bg, "k", "a", rec))
	rec[0] = 'X' // the caller reuses its buffer
	got, found := recorded(t, s, "k")
	if !found || string(got) != "HTTP/1.1 201\x00body" {
		t.Fatalf("Recorded = %q, %v; want the bytes as they were at Record", got, found)
	}
	got[0] = 'Y' // the reader changes what it got
	if again, _ := recorded(t, s, "k"); string(again) != "HTTP/1.1 201\x00body" {
		t.Fatalf("Recorded after the reader changed its copy = %q", again)
	}
	if n := s.checkRecordBytes(t); n != 1 {
		t.Fatalf("%d records stored, want 1", n)
	}
}

func TestRecordInvalid(t *testing.T) {
	s := New()
	acquire(t, s, "k", "a", time.Minute)
	for name, call := range map[string]func() error{
		"Record with an empty key": func() error { _, err := s.Record(bg, "", "a", nil); return err },
		"Record with an empty token": func() error {
			_, err := s.Record(bg, "k", "", nil)
			return err
		},
		"Recorded with an empty key": func() error { _, _, err := s.Recorded(bg, ""); return err },
	} {
		if err := call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want store.ErrInvalid", name, err)
		}
	}
	if _, found := recorded(t, s, "k"); found {
		t.Fatal("a refused Record wrote a record")
	}
}

func TestRecordExpiresWithTheLock(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", time.Second)
	clk.Advance(400 * time.Millisecond)
	outcome(t, store.OK)(s.Record(bg, "k", "a", []byte("r")))
	clk.Advance(599 * time.Millisecond)
	if _, found := recorded(t, s, "k"); !found {
		t.Fatal("record gone 1ms before its lock expires")
	}
	clk.Advance(time.Millisecond)
	if _, found := recorded(t, s, "k"); found {
		t.Fatal("record still there when its lock expired")
	}
	if n := s.checkRecordBytes(t); n != 0 {
		t.Fatalf("%d records stored after expiry, want 0", n)
	}

	// A lock that expires takes its record with it when it is next
	// touched, here by the next holder.
	acquire(t, s, "k2", "a", time.Second)
	outcome(t, store.OK)(s.Record(bg, "k2", "a", []byte("r")))
	clk.Advance(time.Second)
	if g := acquire(t, s, "k2", "b", time.Second); !g.Acquired {
		t.Fatalf("expired key refused: %+v", g)
	}
	if n := s.checkRecordBytes(t); n != 0 {
		t.Fatalf("%d records stored once the expired lock was replaced, want 0", n)
	}
	if _, found := recorded(t, s, "k2"); found {
		t.Fatal("the new holder sees the expired holder's record")
	}
}

// TestRecordKeepsItsExpiry: Extend moves the lock, not the record, as in
// Redis (see store.Recorder).
func TestRecordKeepsItsExpiry(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", time.Second)
	outcome(t, store.OK)(s.Record(bg, "k", "a", []byte("r")))
	outcome(t, store.OK)(s.Extend(bg, "k", "a", time.Minute))
	clk.Advance(time.Second)
	if _, found := recorded(t, s, "k"); found {
		t.Fatal("record outlived the expiry its lock had when it was written")
	}
	// Recording again gives it the extended lock's expiry.
	outcome(t, store.OK)(s.Record(bg, "k", "a", []byte("r2")))
	clk.Advance(58 * time.Second)
	if rec, found := recorded(t, s, "k"); !found || string(rec) != "r2" {
		t.Fatalf("record after Extend = %q, %v; want r2", rec, found)
	}
}

func TestRecordReentrant(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "owner", TTL: time.Minute, Reentrant: true}
	for range 2 {
		if g, err := s.Acquire(bg, req); err != nil || !g.Acquired {
			t.Fatalf("reentrant Acquire: %+v, %v", g, err)
		}
	}
	outcome(t, store.HeldByOther)(s.Record(bg, "k", "other", []byte("r")))
	outcome(t, store.OK)(s.Record(bg, "k", "owner", []byte("r")))
	outcome(t, store.StillHeld)(s.Release(bg, "k", "owner"))
	if _, found := recorded(t, s, "k"); !found {
		t.Fatal("a release that left the key held deleted its record")
	}
	outcome(t, store.OK)(s.Release(bg, "k", "owner"))
	if _, found := recorded(t, s, "k"); found {
		t.Fatal("the last release left the record")
	}
	if n := s.checkRecordBytes(t); n != 0 {
		t.Fatalf("%d records stored, want 0", n)
	}
}

func TestRecordBytesBound(t *testing.T) {
	clk := newFakeClock()
	// 16 keys make a store of one shard, so the whole bound is its share,
	// and the keys' one policy may fill it (see TestRecordPolicyShare).
	s := New(WithClock(clk.Now), WithMaxKeys(16), WithMaxRecordBytes(1000), WithPolicyShare(1))
	if len(s.shards) != 1 {
		t.Fatalf("%d shards, the test needs one", len(s.shards))
	}
	for i := range 5 {
		acquire(t, s, "k"+strconv.Itoa(i), "t", time.Second)
	}
	b := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }

	_, err := s.Record(bg, "k0", "t", b(1001))
	if !errors.Is(err, store.ErrInvalid) || errors.Is(err, ErrFull) {
		t.Fatalf("Record of 1001 bytes into a bound of 1000: %v, want store.ErrInvalid", err)
	}
	outcome(t, store.OK)(s.Record(bg, "k0", "t", b(600)))
	_, err = s.Record(bg, "k1", "t", b(600))
	if !errors.Is(err, ErrFull) || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Record of 600 bytes next to 600 in a bound of 1000: %v, want ErrFull", err)
	}
	if _, found := recorded(t, s, "k1"); found {
		t.Fatal("a Record that failed with ErrFull wrote a record")
	}
	// A full shard keeps the earlier record of a key that failed to
	// record more.
	if _, err := s.Record(bg, "k0", "t", b(1000)); err != nil {
		t.Fatalf("replacing 600 bytes by 1000 in a bound of 1000: %v", err)
	}
	_, err = s.Record(bg, "k0", "t", b(1001))
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Record of 1001 bytes: %v", err)
	}
	if rec, _ := recorded(t, s, "k0"); len(rec) != 1000 {
		t.Fatalf("after a refused replacement the record has %d bytes, want the earlier 1000", len(rec))
	}
	// A small record (a Replay's mark that a response was not kept)
	// fits a full shard.
	outcome(t, store.OK)(s.Record(bg, "k2", "t", b(smallRecord)))
	// Replacing by a shorter record frees the difference (1000+64 bytes
	// held, then 300+64, then 300+600+64).
	outcome(t, store.OK)(s.Record(bg, "k0", "t", b(300)))
	outcome(t, store.OK)(s.Record(bg, "k1", "t", b(600)))
	// Release gives the bytes back (600+64, then 600+300).
	outcome(t, store.OK)(s.Release(bg, "k0", "t"))
	outcome(t, store.OK)(s.Record(bg, "k2", "t", b(300)))
	if _, err := s.Record(bg, "k3", "t", b(101)); !errors.Is(err, ErrFull) {
		t.Fatalf("Record into a full shard: %v, want ErrFull", err)
	}
	// Expired records are swept when the shard is full: k1 and k2 expire
	// with their locks; k3 and k4 are acquired anew.
	clk.Advance(time.Second)
	acquire(t, s, "k3", "t2", time.Second)
	acquire(t, s, "k4", "t2", time.Second)
	outcome(t, store.OK)(s.Record(bg, "k3", "t2", b(400)))
	outcome(t, store.OK)(s.Record(bg, "k4", "t2", b(400)))
	if n := s.checkRecordBytes(t); n != 2 {
		t.Fatalf("%d records stored, want k3's and k4's", n)
	}
}

func TestRecordDefaultBound(t *testing.T) {
	s := New()
	acquire(t, s, "k", "t", time.Minute)
	// One policy's share of one shard's share.
	share := int(float64(DefaultMaxRecordBytes/len(s.shards)) * DefaultPolicyShare)
	if _, err := s.Record(bg, "k", "t", make([]byte, share+1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Record of a policy's share of a shard's share plus one byte: %v, want store.ErrInvalid", err)
	}
	outcome(t, store.OK)(s.Record(bg, "k", "t", make([]byte, share)))
}

func TestLenCountsRecords(t *testing.T) {
	s := New()
	acquire(t, s, "a", "t", time.Minute)
	acquire(t, s, "b", "t", time.Minute)
	outcome(t, store.OK)(s.Record(bg, "a", "t", nil))
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3: two locks and one record", n)
	}
	outcome(t, store.OK)(s.Release(bg, "a", "t"))
	if n := s.Len(); n != 1 {
		t.Fatalf("Len after the release = %d, want 1", n)
	}
}

// TestRecordConcurrent races records, replacements, reads and releases on a
// few keys (for the race detector) and then checks the byte count.
func TestRecordConcurrent(t *testing.T) {
	s := New(WithMaxKeys(64), WithMaxRecordBytes(1<<12))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				key := "k" + strconv.Itoa(i%5)
				tok := strconv.Itoa(g)
				if _, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Minute}); err != nil {
					t.Error(err)
					return
				}
				_, err := s.Record(bg, key, tok, bytes.Repeat([]byte{byte(g)}, i%97))
				if err != nil && !errors.Is(err, ErrFull) {
					t.Error(err)
					return
				}
				if rec, found, err := s.Recorded(bg, key); err != nil {
					t.Error(err)
					return
				} else if found && len(bytes.Trim(rec, string(rec[:min(1, len(rec))]))) != 0 {
					t.Errorf("record %q mixes two writers", rec)
					return
				}
				if _, err := s.Release(bg, key, tok); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := s.checkRecordBytes(t); n != 0 {
		t.Fatalf("%d records left after every key was released", n)
	}
}
