package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// smallRecord is the size of a record that always fits (see Record).
const smallRecord = 64

// record is a copy of the bytes a holder gave, and its lock's expiry then.
type record struct {
	data    []byte
	expires time.Duration
	pol     uint16
}

func (r record) expiry() time.Duration { return r.expires }
func (r record) policy() uint16        { return r.pol }
func (r record) size() int64           { return int64(len(r.data)) }

// Record keeps a copy of rec as key's record and sets key's TTL to ttl if
// token holds key (see store.Recorder). A rec that does not fit
// WithMaxRecordBytes changes nothing.
func (s *Store) Record(ctx context.Context, key, token string, rec []byte, ttl time.Duration) (store.Outcome, error) {
	if key == "" || token == "" || ttl <= 0 {
		return 0, fmt.Errorf("%w: memstore: empty key or token, or ttl %v not positive", store.ErrInvalid, ttl)
	}
	sh := s.shard(key)
	if n := int64(len(rec)); n > sh.records.limit {
		return 0, fmt.Errorf("%w: memstore: a record of %d bytes, above WithMaxRecordBytes's %d per shard", store.ErrInvalid, n, sh.records.limit)
	}
	out, err := s.ifOwned(ctx, key, token, func(sh *shard, i int, l lock, now time.Duration) store.Outcome {
		old, had := sh.records.get(key, now)
		if len(rec) > smallRecord && !sh.records.room(l.pol, int64(len(rec)-len(old.data)), now) {
			return 0 // full
		}
		if had {
			sh.records.drop(key, old)
		}
		l = extended(sh, i, l, now, ttl)
		sh.records.put(key, record{data: append([]byte{}, rec...), expires: l.expires, pol: l.pol}, true)
		sh.notify(key)
		return store.OK
	}, nil)
	if out == 0 && err == nil {
		return 0, fmt.Errorf("%w: memstore: no room left for a record of %d bytes: %w", store.ErrInvalid, len(rec), errFull)
	}
	return out, err
}

// Recorded returns a copy of key's record (see store.Recorder).
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
	r, ok := sh.records.get(key, now)
	if !ok {
		return nil, false, nil
	}
	return append([]byte{}, r.data...), true, nil
}
