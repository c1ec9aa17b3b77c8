package memstore

import (
	"context"
	"fmt"

	"github.com/go-throttle/throttle/throttle/store"
)

// Delete removes keys whoever holds them (see store.Store): each key's lock,
// with its hold count or its holders, its record and its quota, and wakes its watchers. The
// fence counters stay, so that fences keep increasing.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, key := range keys {
		if key == "" {
			return fmt.Errorf("%w: memstore: empty key", store.ErrInvalid)
		}
	}
	for _, key := range keys {
		s.delete(key)
	}
	return nil
}

// delete removes key's lock or holders, record and quota under its shard's lock.
func (s *Store) delete(key string) {
	now, _ := s.now(false)
	sh, tag := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, i, held := sh.locks.get(key, tag, now); held {
		sh.locks.release(i)
	}
	if r, ok := sh.records.m[key]; ok {
		sh.records.drop(key, r)
	}
	if q, ok := sh.quotas.m[key]; ok {
		sh.quotas.drop(key, q)
	}
	if l, ok := sh.logs.m[key]; ok {
		sh.logs.drop(key, l)
	}
	if sm := sh.sems.m[key]; sm != nil {
		sh.locks.count(sm.pol, -int64(len(sm.holders)))
		delete(sh.sems.m, key)
	}
	sh.notify(key)
}
