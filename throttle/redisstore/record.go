package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle/store"
)

var _ store.Recorder = (*Store)(nil)

// Record stores rec as key's record if token holds key (a plain lock, or a
// reentrant one with a hold of token), in one script and one round trip: a
// string at store.RecordKey(key), replacing any earlier record, that
// expires at the very millisecond the lock does (the script copies the
// lock's PEXPIRETIME into SET PXAT), so it cannot outlive a lock that runs
// out. The script then publishes on the key's release channel, which wakes
// the key's watchers (Watch) as a release does. See store.Recorder for what
// the outcomes mean and why; Release deletes the record with the lock.
//
// Record needs Redis 7.0 or later (the script reads the lock's expiry with
// PEXPIRETIME); older servers fail it with an error and nothing is written.
// Redis bounds a record's size by its proto-max-bulk-len (512 MB by
// default) and, under noeviction, by maxmemory: both refuse a record with an
// error rather than keep part of it. Like Release and Extend, Record is not
// waited for by WithReplicaAck. On a Redis Cluster, while the slot of key
// migrates and its lock and record are not on one node, Redis refuses the
// script (TRYAGAIN) until the migration ends: Record then fails with a store
// error, having written nothing.
func (s *Store) Record(ctx context.Context, key, token string, rec []byte) (store.Outcome, error) {
	if err := checkRequest(key, token, time.Millisecond); err != nil {
		return 0, err
	}
	keys := []string{key, store.RecordKey(key)}
	n, err := recordScript.Run(ctx, s.client, keys, token, rec, channel(key)).Int64()
	if err != nil {
		return 0, callError("record", err)
	}
	return outcome("record", n)
}

// Recorded returns key's record with one GET of store.RecordKey(key), and
// found false when the key has none. It works throughout a Cluster slot
// migration (one key: go-redis follows the redirections).
func (s *Store) Recorded(ctx context.Context, key string) ([]byte, bool, error) {
	if key == "" {
		return nil, false, fmt.Errorf("%w: redisstore: empty key", errInvalid)
	}
	rec, err := s.client.Get(ctx, store.RecordKey(key)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, callError("recorded", err)
	}
	return rec, true, nil
}

// release runs release.lua for Store.Release: it frees key if token holds
// it and deletes the lock's record (store.RecordKey) in the same atomic
// step, the record being the script's second key, so that a holder that
// gives its key up leaves nothing to replay.
//
// A script on two keys has one weakness on a Redis Cluster: while their slot
// migrates, Redis runs it only on a node that holds both keys, and answers
// TRYAGAIN (or, once go-redis gave up following redirections, ASK) on one
// that holds some of them or, being the target, not all. A lock without a
// record is always in that case, and Release must keep working during a
// migration as it did on one key. So when the script is refused, release
// asks whether the record exists (EXISTS follows the redirections) and, when
// it does not, releases the lock alone, which is then the same step: only the
// lock's holder can write a record, so none can appear for the key in
// between unless the holder records and releases at once. When the record
// exists on one node and the lock on the other, nothing can free both
// atomically until the migration ends, and release fails without changing
// anything; the Limiter retries a failed release in the background, and the
// lock expires meanwhile at the latest.
//
// Passing the record key always, rather than only when the store knows of a
// record, is deliberate: a record may have been written by another process
// (a reentrant owner is shared across processes), and a release that left
// it behind would let a later holder's duplicates replay it. It costs one
// allocation and a DEL of a missing key: Redis measured (INFO commandstats,
// 16 callers) 3.3 us per release.lua EVALSHA with the record key and 3.0
// without it, against 1.9 for a GET-compare-DEL script on the lock alone;
// the script's own TYPE check and PUBLISH weigh more than the record.
func release(ctx context.Context, c redis.UniversalClient, key, token string) *redis.IntCmd {
	rec, ch := recordAndChannel(key)
	cmd := run(ctx, c, releaseScript, redis.NewIntCmd, []any{nil, nil, "2", key, rec, token, ch})
	if !slotMoving(cmd.Err()) {
		return cmd
	}
	n, err := c.Exists(ctx, rec).Result()
	if err == nil && n > 0 {
		err = fmt.Errorf("the lock and its record are on different nodes while their Cluster slot migrates, "+
			"and cannot be released together before it ends; nothing was released: %w", cmd.Err())
	}
	if err != nil {
		failed := redis.NewIntCmd(ctx)
		failed.SetErr(err)
		return failed
	}
	return run(ctx, c, releaseScript, redis.NewIntCmd, []any{nil, nil, "1", key, token, ch})
}

// recordSuffix is what store.RecordKey appends to a lock key.
var recordSuffix = store.RecordKey("")

// recordAndChannel returns store.RecordKey(key) and channel(key), the
// record and release channel of a lock, as two parts of one string: one
// allocation instead of two, on every Release.
func recordAndChannel(key string) (record, ch string) {
	s := key + recordSuffix + key + channelSuffix
	n := len(key) + len(recordSuffix)
	return s[:n], s[n:]
}

// slotMoving reports whether err is Redis refusing a command on several keys
// of a Cluster slot that is migrating: TRYAGAIN, or the ASK redirection that
// go-redis returns when it stopped following them. Like noScript, it tests
// err for nil first, sparing every successful release two allocations.
func slotMoving(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "TRYAGAIN") || redis.HasErrorPrefix(err, "ASK "))
}
