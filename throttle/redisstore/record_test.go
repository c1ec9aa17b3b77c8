package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// mustRecorded fails the test unless key's record is want (found is false
// for want == nil).
func mustRecorded(t testing.TB, s *redisstore.Store, key string, want []byte) {
	t.Helper()
	got, found, err := s.Recorded(context.Background(), key)
	require.NoError(t, err, "Recorded(%q)", key)
	if found != (want != nil) || string(got) != string(want) {
		t.Fatalf("Recorded(%q) = %q, %v; want %q, %v", key, got, found, want, want != nil)
	}
}

// mustNotExist fails the test unless none of keys exists in Redis.
func mustNotExist(t testing.TB, c redis.Cmdable, keys ...string) {
	t.Helper()
	if n, err := c.Exists(context.Background(), keys...).Result(); err != nil || n != 0 {
		t.Fatalf("%d of %q exist (%v), want none", n, keys, err)
	}
}

// TestRecordDataModel checks what Record writes: a string at
// storekit.RecordKey with exactly the lock's expiry, for a plain and for a
// reentrant lock, and none for a lock written without one.
func TestRecordDataModel(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	sameExpiry := func(k string) {
		t.Helper()
		lock, err1 := c.PExpireTime(ctx, k).Result()
		rec, err2 := c.PExpireTime(ctx, storekit.RecordKey(k)).Result()
		require.NoError(t, errors.Join(err1, err2))
		if lock <= 0 || rec != lock {
			t.Fatalf("record expires at %v, its lock at %v; want the same time", rec, lock)
		}
	}

	k, tok := key(t), storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
	mustOutcome(t, store.OK)(s.Record(ctx, k, tok, []byte("\x00\xffrec"), time.Minute))
	if got, err := c.Get(ctx, storekit.RecordKey(k)).Result(); err != nil || got != "\x00\xffrec" {
		t.Fatalf("GET record key = %q, %v", got, err)
	}
	sameExpiry(k)
	mustOutcome(t, store.HeldByOther)(s.Release(ctx, k, storekit.NewToken()))
	mustRecorded(t, s, k, []byte("\x00\xffrec"))
	mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
	mustNotExist(t, c, k, storekit.RecordKey(k))

	// A reentrant lock (a hash), fenced: the record follows its expiry and
	// stays while holds remain.
	k, tok = key(t), storekit.NewToken()
	req := store.Request{Key: k, Token: tok, TTL: time.Minute, Reentrant: true, Fence: true}
	mustAcquire(t, s, req)
	mustAcquire(t, s, req)
	mustOutcome(t, store.OK)(s.Record(ctx, k, tok, []byte("r"), time.Minute))
	sameExpiry(k)
	mustOutcome(t, store.StillHeld)(s.Release(ctx, k, tok))
	mustRecorded(t, s, k, []byte("r"))
	mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
	mustNotExist(t, c, k, storekit.RecordKey(k))

	// A lock stored without an expiry (by something other than throttle)
	// gets the record's ttl, and its record the same expiry; the release
	// deletes both.
	k, tok = key(t), storekit.NewToken()
	require.NoError(t, c.Set(ctx, k, tok, 0).Err())
	mustOutcome(t, store.OK)(s.Record(ctx, k, tok, []byte("r"), time.Minute))
	sameExpiry(k)
	mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
	mustNotExist(t, c, k, storekit.RecordKey(k))

	// A key of another type is nobody's lock.
	k = key(t)
	require.NoError(t, c.RPush(ctx, k, "x").Err())
	mustOutcome(t, store.HeldByOther)(s.Record(ctx, k, "x", []byte("r"), time.Minute))
	mustNotExist(t, c, storekit.RecordKey(k))
}

func TestRecordRefusals(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	k := key(t)
	if _, err := s.Record(ctx, k, ":fence", nil, time.Minute); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Record with the reserved token: %v, want store.ErrInvalid", err)
	}
	// A record key that is not a string (written by something else) is an
	// error, not a missing record.
	require.NoError(t, c.HSet(ctx, storekit.RecordKey(k), "f", "v").Err())
	if rec, found, err := s.Recorded(ctx, k); err == nil {
		t.Fatalf("Recorded of a hash = %q, %v, nil; want an error", rec, found)
	}
}

// TestRecordPublishes: Record publishes on the channel Watch listens to.
func TestRecordPublishes(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	k, tok := key(t), storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
	ps := c.Subscribe(ctx, k+":released")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		t.Fatal(err)
	}
	// Neither a refused record nor a read publishes: the marker published
	// after them is the first message.
	mustOutcome(t, store.HeldByOther)(s.Record(ctx, k, storekit.NewToken(), []byte("r"), time.Minute))
	mustRecorded(t, s, k, nil)
	require.NoError(t, c.Publish(ctx, k+":released", "marker").Err())
	mustOutcome(t, store.OK)(s.Record(ctx, k, tok, []byte("r"), time.Minute))
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for _, want := range []string{"marker", "1"} {
		msg, err := ps.ReceiveMessage(rctx)
		require.NoError(t, err, "waiting for %q", want)
		if msg.Channel != k+":released" || msg.Payload != want {
			t.Fatalf("message %q on %q, want %q", msg.Payload, msg.Channel, want)
		}
	}
}

// TestReleaseWhileSlotMigrates checks the release of locks with and without
// a record, and Record, half-way through a Redis Cluster slot migration.
// Release runs one script on the lock and its record, which Redis refuses
// (TRYAGAIN) on a node that holds only one of them; the store then releases
// a lock without a record alone, and refuses, changing nothing, to release
// one whose record is on the other node.
func TestReleaseWhileSlotMigrates(t *testing.T) {
	env := &clusterEnv{Cluster: redistest.StartCluster(t, 3)}
	env.cc = env.Client(t)
	s := env.store(t)
	ctx := context.Background()
	const slot = 4321
	from := env.Owner(t, slot)
	to := env.Masters[0]
	if to == from {
		to = env.Masters[1]
	}
	ids := idsInSlot(t, "rec", "mig", slot, 6)
	k := func(i int) string { return storekit.Key("rec", "mig", ids[i]) }
	both, split, bare, moved, movedBare, unrecorded := k(0), k(1), k(2), k(3), k(4), k(5)
	toks := map[string]string{}
	for _, key := range []string{both, split, bare, moved, movedBare, unrecorded} {
		toks[key] = storekit.NewToken()
		mustAcquire(t, s, store.Request{Key: key, Token: toks[key], TTL: time.Minute})
	}
	for _, key := range []string{both, split, moved} {
		mustOutcome(t, store.OK)(s.Record(ctx, key, toks[key], []byte("rec "+key), time.Minute))
	}

	m := env.BeginMigration(t, slot, from, to)
	m.Move(t, split, moved, storekit.RecordKey(moved), movedBare)

	// Lock and record on one node: the script runs there.
	mustOutcome(t, store.OK)(s.Record(ctx, both, toks[both], []byte("again"), time.Minute))
	mustOutcome(t, store.OK)(s.Release(ctx, both, toks[both]))
	mustOutcome(t, store.OK)(s.Release(ctx, moved, toks[moved]))
	mustRecorded(t, s, both, nil)
	mustRecorded(t, s, moved, nil)
	// No record: the lock is released alone, on either node.
	mustOutcome(t, store.OK)(s.Release(ctx, bare, toks[bare]))
	mustOutcome(t, store.OK)(s.Release(ctx, movedBare, toks[movedBare]))
	mustOutcome(t, store.HeldByOther)(s.Release(ctx, unrecorded, toks[split]))
	// The lock on the target, its record on the source: nothing changes.
	if out, err := s.Release(ctx, split, toks[split]); err == nil {
		t.Fatalf("Release of a lock whose record is on the other node: %v, want an error", out)
	} else {
		t.Logf("Release of a split lock and record: %v", err)
	}
	refused := func(key string) {
		t.Helper()
		g, err := s.Acquire(ctx, store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Minute})
		require.NoError(t, err, "contender for %s: %+v, %v; want refused", key, g, err)
		require.False(t, g.Acquired, "contender for %s: %+v, %v; want refused", key, g, err)
	}
	refused(split)
	mustRecorded(t, s, split, []byte("rec "+split))
	// Record on a lock without a record on the same node fails, writing
	// nothing (see Store.Record).
	if out, err := s.Record(ctx, unrecorded, toks[unrecorded], []byte("r"), time.Minute); err == nil {
		t.Fatalf("Record during the migration: %v, want an error", out)
	}
	mustRecorded(t, s, unrecorded, nil)

	m.MoveAll(t)
	m.Finish(t)
	mustOutcome(t, store.OK)(s.Release(ctx, split, toks[split]))
	mustOutcome(t, store.OK)(s.Release(ctx, unrecorded, toks[unrecorded]))
	mustNotExist(t, env.cc, storekit.RecordKey(split))
	for _, key := range []string{both, split, bare, moved, movedBare, unrecorded} {
		mustAcquire(t, s, store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Minute})
	}
}
