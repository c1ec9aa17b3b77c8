package rueidisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/throttle/store"
)

// Record stores rec as key's record if token holds key, in one script and
// one round trip: a string at store.RecordKey(key) that expires at the very
// millisecond the lock does, after which the script publishes on the key's
// release channel to wake its watchers. It needs Redis 7.0 or later
// (PEXPIRETIME). See redisstore.Store.Record, which runs the same script,
// and store.Recorder for what the outcomes mean.
func (s *Store) Record(ctx context.Context, key, token string, rec []byte) (store.Outcome, error) {
	if err := checkRequest(key, token, time.Millisecond); err != nil {
		return 0, err
	}
	keys := []string{key, store.RecordKey(key)}
	n, err := recordScript.Exec(ctx, s.client, keys, []string{token, string(rec), channel(key)}).AsInt64()
	if err != nil {
		return 0, callError("record", err)
	}
	return outcome("record", n)
}

// Recorded returns key's record with one GET of store.RecordKey(key), and
// found false when the key has none.
func (s *Store) Recorded(ctx context.Context, key string) ([]byte, bool, error) {
	if key == "" {
		return nil, false, fmt.Errorf("%w: rueidisstore: empty key", store.ErrInvalid)
	}
	rec, err := s.client.Do(ctx, s.client.B().Get().Key(store.RecordKey(key)).Build()).AsBytes()
	switch {
	case rueidis.IsRedisNil(err):
		return nil, false, nil
	case err != nil:
		return nil, false, callError("recorded", err)
	}
	return rec, true, nil
}
