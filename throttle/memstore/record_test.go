package memstore

import (
	"bytes"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// checkRecordBytes fails the test unless every shard counts the bytes its
// records hold, and returns the number of records.
func (s *Store) checkRecordBytes(t *testing.T) int {
	t.Helper()
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		var sum int64
		for _, r := range sh.records.m {
			sum += int64(len(r.data))
		}
		n += len(sh.records.m)
		got := sh.records.used
		sh.mu.Unlock()
		require.Equal(t, sum, got, "shard %d: counted record bytes", i)
	}
	return n
}

func recorded(t *testing.T, s *Store, key string) ([]byte, bool) {
	t.Helper()
	rec, found, err := s.Recorded(bg, key)
	require.NoError(t, err, "Recorded(%q)", key)
	if !found {
		require.Nil(t, rec, "Recorded(%q) found nothing", key)
	}
	return rec, found
}

func bytesOf(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }

func TestRecordKeepsACopy(t *testing.T) {
	s := New()
	acquire(t, s, "k", "a", time.Minute)
	rec := []byte("HTTP/1.1 201\x00body")
	outcome(t, store.OK)(s.Record(bg, "k", "a", rec, time.Minute))
	rec[0] = 'X' // the caller reuses its buffer
	got, found := recorded(t, s, "k")
	require.True(t, found)
	require.Equal(t, "HTTP/1.1 201\x00body", string(got), "the bytes as they were at Record")
	got[0] = 'Y' // the reader changes what it got
	again, _ := recorded(t, s, "k")
	require.Equal(t, "HTTP/1.1 201\x00body", string(again))
	require.Equal(t, 1, s.checkRecordBytes(t))
}

func TestRecordInvalid(t *testing.T) {
	s := New()
	acquire(t, s, "k", "a", time.Minute)
	_, err := s.Record(bg, "", "a", nil, time.Minute)
	assert.ErrorIs(t, err, store.ErrInvalid, "Record with an empty key")
	_, err = s.Record(bg, "k", "", nil, time.Minute)
	assert.ErrorIs(t, err, store.ErrInvalid, "Record with an empty token")
	_, err = s.Record(bg, "k", "a", nil, 0)
	assert.ErrorIs(t, err, store.ErrInvalid, "Record with a zero ttl")
	_, _, err = s.Recorded(bg, "")
	assert.ErrorIs(t, err, store.ErrInvalid, "Recorded with an empty key")
	_, found := recorded(t, s, "k")
	require.False(t, found, "a refused Record wrote a record")
}

func TestRecordExpiresWithTheLock(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", time.Second)
	clk.Advance(400 * time.Millisecond)
	outcome(t, store.OK)(s.Record(bg, "k", "a", []byte("r"), 600*time.Millisecond))
	clk.Advance(599 * time.Millisecond)
	_, found := recorded(t, s, "k")
	require.True(t, found, "1ms before its lock expires")
	clk.Advance(time.Millisecond)
	_, found = recorded(t, s, "k")
	require.False(t, found, "when its lock expired")
	require.Zero(t, s.checkRecordBytes(t))

	// A lock that expires takes its record with it when it is next
	// touched, here by the next holder.
	acquire(t, s, "k2", "a", time.Second)
	outcome(t, store.OK)(s.Record(bg, "k2", "a", []byte("r"), time.Second))
	clk.Advance(time.Second)
	require.True(t, acquire(t, s, "k2", "b", time.Second).Acquired)
	require.Zero(t, s.checkRecordBytes(t), "records once the expired lock was replaced")
	_, found = recorded(t, s, "k2")
	require.False(t, found, "the new holder sees the expired holder's record")
}

// TestRecordKeepsItsExpiry: Extend moves the lock, not the record, as in
// Redis (see store.Recorder).
func TestRecordKeepsItsExpiry(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", time.Second)
	outcome(t, store.OK)(s.Record(bg, "k", "a", []byte("r"), time.Second))
	outcome(t, store.OK)(s.Extend(bg, "k", "a", time.Minute))
	clk.Advance(time.Second)
	_, found := recorded(t, s, "k")
	require.False(t, found, "record outlived the expiry its lock had when it was written")
	// Recording again gives it the extended lock's expiry.
	outcome(t, store.OK)(s.Record(bg, "k", "a", []byte("r2"), time.Minute))
	clk.Advance(58 * time.Second)
	rec, found := recorded(t, s, "k")
	require.True(t, found)
	require.Equal(t, "r2", string(rec))
}

func TestRecordReentrant(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "owner", TTL: time.Minute, Reentrant: true}
	for range 2 {
		g, err := s.Acquire(bg, req)
		require.NoError(t, err)
		require.True(t, g.Acquired)
	}
	outcome(t, store.HeldByOther)(s.Record(bg, "k", "other", []byte("r"), time.Minute))
	outcome(t, store.OK)(s.Record(bg, "k", "owner", []byte("r"), time.Minute))
	outcome(t, store.StillHeld)(s.Release(bg, "k", "owner"))
	_, found := recorded(t, s, "k")
	require.True(t, found, "a release that left the key held deleted its record")
	outcome(t, store.OK)(s.Release(bg, "k", "owner"))
	_, found = recorded(t, s, "k")
	require.False(t, found, "the last release left the record")
	require.Zero(t, s.checkRecordBytes(t))
}

func TestRecordBytesBound(t *testing.T) {
	clk := newFakeClock()
	// 16 keys make a store of one shard, so the whole bound is its share,
	// and the keys' one policy may fill it (see TestRecordPolicyShare).
	s := New(WithClock(clk.Now), WithMaxKeys(16), WithMaxRecordBytes(1000))
	require.Len(t, s.shards, 1)
	for i := range 5 {
		acquire(t, s, "k"+strconv.Itoa(i), "t", time.Second)
	}
	_, err := s.Record(bg, "k0", "t", bytesOf(1001), time.Second)
	require.ErrorIs(t, err, store.ErrInvalid, "1001 bytes into a bound of 1000")
	require.NotErrorIs(t, err, errFull)
	outcome(t, store.OK)(s.Record(bg, "k0", "t", bytesOf(600), time.Second))
	_, err = s.Record(bg, "k1", "t", bytesOf(600), time.Second)
	require.ErrorIs(t, err, errFull, "600 bytes next to 600 in a bound of 1000")
	require.ErrorIs(t, err, store.ErrInvalid)
	_, found := recorded(t, s, "k1")
	require.False(t, found, "a Record that failed with errFull wrote a record")
	// A full shard keeps the earlier record of a key that failed to record
	// more.
	outcome(t, store.OK)(s.Record(bg, "k0", "t", bytesOf(1000), time.Second))
	_, err = s.Record(bg, "k0", "t", bytesOf(1001), time.Second)
	require.ErrorIs(t, err, store.ErrInvalid)
	rec, _ := recorded(t, s, "k0")
	require.Len(t, rec, 1000, "the earlier record after a refused replacement")
	// A small record (a Replay's mark that a response was not kept) fits
	// a full shard.
	outcome(t, store.OK)(s.Record(bg, "k2", "t", bytesOf(smallRecord), time.Second))
	// Replacing by a shorter record frees the difference (1000+64 bytes
	// held, then 300+64, then 300+600+64).
	outcome(t, store.OK)(s.Record(bg, "k0", "t", bytesOf(300), time.Second))
	outcome(t, store.OK)(s.Record(bg, "k1", "t", bytesOf(600), time.Second))
	// Release gives the bytes back (600+64, then 600+300).
	outcome(t, store.OK)(s.Release(bg, "k0", "t"))
	outcome(t, store.OK)(s.Record(bg, "k2", "t", bytesOf(300), time.Second))
	_, err = s.Record(bg, "k3", "t", bytesOf(101), time.Second)
	require.ErrorIs(t, err, errFull, "Record into a full shard")
	// Expired records are swept when the shard is full: k1 and k2 expire
	// with their locks; k3 and k4 are acquired anew.
	clk.Advance(time.Second)
	acquire(t, s, "k3", "t2", time.Second)
	acquire(t, s, "k4", "t2", time.Second)
	outcome(t, store.OK)(s.Record(bg, "k3", "t2", bytesOf(400), time.Second))
	outcome(t, store.OK)(s.Record(bg, "k4", "t2", bytesOf(400), time.Second))
	require.Equal(t, 2, s.checkRecordBytes(t), "k3's and k4's records")
}

func TestRecordDefaultBound(t *testing.T) {
	s := New()
	acquire(t, s, "k", "t", time.Minute)
	// One shard's share: a policy alone may use all of it.
	share := defaultMaxRecordBytes / len(s.shards)
	_, err := s.Record(bg, "k", "t", make([]byte, share+1), time.Minute)
	require.ErrorIs(t, err, store.ErrInvalid)
	outcome(t, store.OK)(s.Record(bg, "k", "t", make([]byte, share), time.Minute))
}

func TestLenCountsRecords(t *testing.T) {
	s := New()
	acquire(t, s, "a", "t", time.Minute)
	acquire(t, s, "b", "t", time.Minute)
	outcome(t, store.OK)(s.Record(bg, "a", "t", nil, time.Minute))
	require.Equal(t, 3, s.Len(), "two locks and one record")
	outcome(t, store.OK)(s.Release(bg, "a", "t"))
	require.Equal(t, 1, s.Len(), "after the release")
}

// TestRecordConcurrent races records, replacements, reads and releases on a
// few keys (for the race detector) and then checks the byte count.
func TestRecordConcurrent(t *testing.T) {
	s := New(WithMaxKeys(64), WithMaxRecordBytes(1<<12))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				key := "k" + strconv.Itoa(i%5)
				tok := strconv.Itoa(g)
				_, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Minute})
				if !assert.NoError(t, err) {
					return
				}
				_, err = s.Record(bg, key, tok, bytes.Repeat([]byte{byte(g)}, i%97), time.Minute)
				if err != nil && !assert.ErrorIs(t, err, errFull) {
					return
				}
				rec, found, err := s.Recorded(bg, key)
				if !assert.NoError(t, err) {
					return
				}
				if found {
					assert.Empty(t, bytes.Trim(rec, string(rec[:min(1, len(rec))])), "record %q mixes two writers", rec)
				}
				_, err = s.Release(bg, key, tok)
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, s.checkRecordBytes(t), "records left after every key was released")
}
