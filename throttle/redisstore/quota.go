package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

var _ store.Quota = (*Store)(nil)

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota and store.Rate) in one round trip (two for a returning user
// while most users are new: see below). The time is the Redis server's,
// never the caller's, so that every process sharing the key decides on
// one clock. The key expires when the quota is full
// again, at its theoretical arrival time (TAT); refused requests and peeks
// (cost 0) write nothing, and a refund (negative cost) that leaves the
// quota full deletes the key.
//
// Two scripts share the work. When the emission interval (Window / Limit)
// is a whole number of milliseconds, as it is for nearly every policy,
// gcra_ms.lua keeps the TAT as the key's expiry alone (an empty value):
// PTTL says how far away it is on the server's millisecond clock, and one
// PEXPIRE (or SET PX for a new key) moves it; no TIME, and a GET only for
// a returning user (to make sure the key is a quota). Other intervals (say
// 3 per second) take gcra.lua, which keeps the TAT in the value in
// microseconds, read against the server's TIME. The two read each other's
// keys, to the millisecond.
//
// A script costs the server three to four times what a plain command does
// (redis-server 7.0, INFO commandstats: 5.2–5.4 µs for gcra_ms.lua against
// 1.5–1.8 µs for SET NX PX), and on a busy server that is the price of a
// quota over a lock. So while most charges find no key (every user new in
// its window: a sign-up form, an API whose clients call once a window), a
// charge on a whole-millisecond interval first sends SET key "" PX
// cost*interval NX, which is what gcra_ms.lua does to a key that does not
// exist, and runs the script only when the key exists: a second round
// trip, which is why the store stops trying first once more than about
// one charge in eight finds its key (the same estimate as for acquisitions).
//
// The scripts touch key alone, so a key built by store.Key works on a
// Cluster. WithReplicaAck does not apply to quotas.
//
// AllowN fails with an error matching store.ErrInvalid when key is empty or
// r.Check(cost) fails, with a script error, changing nothing, when key
// holds something else (a key without expiry, or a value that is no TAT),
// and with the client's error when Redis does not answer
// (matching store.ErrNotApplied when the command was never sent).
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if key == "" {
		return store.Decision{}, fmt.Errorf("%w: redisstore: empty key", errInvalid)
	}
	if err := r.Check(cost); err != nil {
		return store.Decision{}, fmt.Errorf("redisstore: %w", err)
	}
	gc := redislua.NewGCRACall(r, s.quotaNow)
	v, err := gc.Charge(cost, &s.returning, s.setFirst(),
		func(px int64) (bool, error) { return s.setNew(ctx, key, px) },
		func() (int64, error) { return s.runGCRA(ctx, key, gc, r, cost) })
	if err != nil {
		return store.Decision{}, callError("quota", err)
	}
	return decision(v, gc.T, int64(r.Burst), int64(cost)), nil
}

// runGCRA runs the GCRA script of gc on key and returns its reply.
func (s *Store) runGCRA(ctx context.Context, key string, gc redislua.GCRACall, r store.Rate, cost int) (int64, error) {
	sc := gcraScript
	if gc.Millis {
		sc = gcraMsScript
	}
	// Laid out for run: two free slots, the number of keys, the key.
	args := make([]any, 7, 8)
	args[2], args[3], args[4], args[5], args[6] = "1", key, gc.Interval, r.Burst, cost
	if gc.Now != 0 {
		args = append(args, gc.Now)
	}
	return run(ctx, s.client, sc, redis.NewIntCmd, args).Result()
}

// setNew is the new-key step of a charge (see redislua.GCRACall.Charge):
// SET key "" PX px NX, the command of a plain lock, no script, so about a
// third of the server time (INFO commandstats: 1.5–1.8 µs against 5.2–5.4
// µs for gcra_ms.lua, redis-server 7.0). charged is false when the key
// exists; nothing is written then.
func (s *Store) setNew(ctx context.Context, key string, px int64) (charged bool, err error) {
	set := redis.NewBoolCmd(ctx, "set", key, "", "px", s.ttlArgs.arg(px), "nx")
	set.SetFirstKeyPos(1)
	_ = s.client.Process(ctx, set)
	return set.Result()
}

// quotaPath is the way a quota charge on a whole-millisecond interval
// starts (see setFirst).
type quotaPath uint8

const (
	quotaAuto     quotaPath = iota // chooses by Store.returning
	quotaSetFirst                  // setNew, then the script if the key exists
	quotaScript                    // the script alone
)

// setFirst reports whether a charge tries setNew before the script:
// under the test hook SetQuotaPath, or while charges mostly find no key
// (returning). A charge on an existing key then costs two round trips, so
// the step pays only while nearly every key is new: a login form's or a
// sign-up's first attempts, an API whose clients come once a window.
func (s *Store) setFirst() bool {
	if s.quotaPath != quotaAuto {
		return s.quotaPath == quotaSetFirst
	}
	return !s.returning.Frequent()
}

// decision decodes the GCRA script's reply (redislua.Decision).
var decision = redislua.Decision
