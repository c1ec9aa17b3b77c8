package memstore

import (
	"context"
	"slices"
	"sync"
)

// Watch returns a channel that receives a value when key is freed by a
// Release, and a stop function that removes the waiter (safe to call more
// than once). The channel has room for one signal and the store never blocks
// on it. Expiry does not signal: the Limiter also polls with backoff, which
// catches an expired key. Each call adds one waiter until stop, so the
// memory it takes is bounded by the callers. It returns ctx.Err() when ctx
// is done.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	sh := s.shard(key)
	sh.mu.Lock()
	if sh.waiters == nil {
		sh.waiters = make(map[string][]chan struct{})
	}
	sh.waiters[key] = append(sh.waiters[key], ch)
	sh.mu.Unlock()

	var once sync.Once
	stop := func() {
		once.Do(func() {
			sh.mu.Lock()
			defer sh.mu.Unlock()
			ws := slices.DeleteFunc(sh.waiters[key], func(c chan struct{}) bool { return c == ch })
			if len(ws) == 0 {
				delete(sh.waiters, key)
			} else {
				sh.waiters[key] = ws
			}
		})
	}
	return ch, stop, nil
}
