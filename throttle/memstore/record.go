package memstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

var _ store.Recorder = (*Store)(nil)

// smallRecord is the size of a record that is never refused for lack of
// room (see Record).
const smallRecord = 64

// record is the record of one key (see Store.Record): a copy of the bytes
// the holder gave, and the expiry its lock had then.
type record struct {
	data    []byte
	expires time.Duration // since Store.epoch
	pol     uint16        // the key's policy (see policy.go)
}

// Record stores a copy of rec as key's record if token holds key (as a plain
// or a reentrant lock), replacing any earlier record, until the lock's
// expiry as it is now; it then wakes key's watchers (see store.Recorder for
// what the outcomes mean and why). Release deletes the record with the lock.
//
// Records count against WithMaxRecordBytes, and per policy against the
// policy's share of it (WithPolicyShare): a rec larger than one policy's
// share of one shard's share, or one that does not fit what is left of the
// shard's share or of the policy's, is refused with an error matching
// store.ErrInvalid (and ErrFull for the second), and in both cases nothing
// is written and any earlier record stays. A rec of at most smallRecord
// bytes always fits (it still counts): a Replay's mark that a response was
// not kept must be written when the budget is spent, and such records are
// bounded by the locks they belong to. It fails with an error
// matching store.ErrInvalid for an empty key or token, and with ctx.Err()
// when ctx is done.
func (s *Store) Record(ctx context.Context, key, token string, rec []byte) (store.Outcome, error) {
	switch {
	case key == "":
		return 0, fmt.Errorf("%w: memstore: empty key", store.ErrInvalid)
	case token == "":
		return 0, fmt.Errorf("%w: memstore: empty token", store.ErrInvalid)
	}
	sh := s.shard(key)
	if n := int64(len(rec)); n > sh.recordPolicyCap {
		return 0, fmt.Errorf("%w: memstore: a record of %d bytes is larger than the %d bytes a shard keeps for one policy (WithMaxRecordBytes, WithPolicyShare)",
			store.ErrInvalid, n, sh.recordPolicyCap)
	}
	var full bool
	out, err := s.ifOwned(ctx, key, token, func(sh *shard, _ uint32, _ int, l lock, now time.Duration) store.Outcome {
		old, ok := sh.records[key]
		if ok && old.expires <= now {
			sh.dropRecord(key, old)
			old, ok = record{}, false
		}
		if len(rec) > smallRecord && !sh.roomForRecord(l.pol, int64(len(rec))-int64(len(old.data)), now) {
			full = true
			return 0
		}
		if ok {
			sh.dropRecord(key, old)
		}
		r := record{data: append(make([]byte, 0, len(rec)), rec...), expires: l.expires, pol: l.pol}
		sh.records[key] = r
		sh.recordBytes += int64(len(r.data))
		sh.recordPols.add(r.pol, int64(len(r.data)))
		sh.recordFloor = min(sh.recordFloor, r.expires)
		sh.notify(key)
		return store.OK
	})
	switch {
	case err != nil:
		return 0, err
	case full:
		return 0, fmt.Errorf("%w: memstore: no room left for a record of %d bytes: %w", store.ErrInvalid, len(rec), ErrFull)
	}
	return out, nil
}

// Recorded returns a copy of key's record, and found false when it has none
// (or only one that expired). It fails with an error matching
// store.ErrInvalid for an empty key and with ctx.Err() when ctx is done.
func (s *Store) Recorded(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if key == "" {
		return nil, false, fmt.Errorf("%w: memstore: empty key", store.ErrInvalid)
	}
	now, _ := s.now(false)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r, ok := sh.records[key]
	if !ok {
		return nil, false, nil
	}
	if r.expires <= now {
		sh.dropRecord(key, r)
		return nil, false, nil
	}
	return append(make([]byte, 0, len(r.data)), r.data...), true, nil
}

// dropRecord removes key's record r and gives its bytes back to the shard.
func (sh *shard) dropRecord(key string, r record) {
	delete(sh.records, key)
	sh.recordBytes -= int64(len(r.data))
	sh.recordPols.add(r.pol, -int64(len(r.data)))
}

// roomForRecord reports whether n more bytes of records of policy pol fit
// the shard's share of WithMaxRecordBytes and pol's share of that (n is
// negative for a record replaced by a shorter one). Like makeRoom, it first removes the expired records among a
// few sampled ones, and when that is not enough and recordFloor says some
// may have expired, it removes every expired record and moves recordFloor.
func (sh *shard) roomForRecord(pol uint16, n int64, now time.Duration) bool {
	fits := func() bool {
		return sh.recordBytes+n <= sh.recordCap && sh.recordPols.get(pol)+n <= sh.recordPolicyCap
	}
	i := 0
	for k, r := range sh.records {
		if i++; i > sampleSize {
			break
		}
		if r.expires <= now {
			sh.dropRecord(k, r)
		}
	}
	if fits() {
		return true
	}
	if now < sh.recordFloor {
		return false
	}
	low := time.Duration(math.MaxInt64)
	for k, r := range sh.records {
		if r.expires <= now {
			sh.dropRecord(k, r)
			continue
		}
		low = min(low, r.expires)
	}
	sh.recordFloor = low
	return fits()
}
