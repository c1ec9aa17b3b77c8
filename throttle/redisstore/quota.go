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
// store.Quota and store.Rate) with one script and one round trip. The time
// is the Redis server's, never the caller's, so that every process sharing
// the key decides on one clock. The key expires when the quota is full
// again, at its theoretical arrival time (TAT); refused requests and peeks
// (cost 0) write nothing, and a refund (negative cost) that leaves the
// quota full deletes the key.
//
// Two scripts share the work. When the emission interval (Window / Limit)
// is a whole number of milliseconds, as it is for nearly every policy,
// gcra_ms.lua keeps the TAT as the key's expiry alone (an empty value):
// PTTL says how far away it is on the server's millisecond clock, and one
// PEXPIRE (or SET PX for a new key) moves it; no TIME, and a GET only for
// a returning user (to make sure the key is a quota). The server
// spends 7–8 µs on it where the general script takes 10–11 (redis-server
// 7.0, INFO commandstats), and on a lone caller's round trip that is most
// of what a quota adds to a plain SET. Other
// intervals (say 3 per second) take gcra.lua, which keeps the TAT in the
// value in microseconds, read against the server's TIME. The two read each
// other's keys, to the millisecond.
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
	v, err := run(ctx, s.client, sc, redis.NewIntCmd, args).Result()
	if err != nil {
		return store.Decision{}, callError("quota", err)
	}
	return decision(v, gc.T, int64(r.Burst), int64(cost)), nil
}

// decision decodes the GCRA script's reply (redislua.Decision).
var decision = redislua.Decision
