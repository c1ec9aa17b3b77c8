package memstore

import (
	"context"
	"slices"
	"sync"
)

// Watch returns a channel told when key is released or recorded, and a stop
// function (see store.Notifier). Expiry does not signal: the limiter's
// backoff finds an expired key.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	sh := s.shard(key)
	sh.mu.Lock()
	sh.waiters[key] = append(sh.waiters[key], ch)
	sh.mu.Unlock()
	var once sync.Once
	return ch, func() {
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
	}, nil
}
