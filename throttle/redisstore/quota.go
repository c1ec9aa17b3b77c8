package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

var _ store.Quota = (*Store)(nil)

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota and store.Rate) with one script (gcra.lua) and one round trip.
// The time is the Redis server's (TIME, in microseconds), never the
// caller's, so that every process sharing the key decides on one clock. The
// key holds the theoretical arrival time as a string of microseconds since
// 1970 and expires (PEXPIRE, rounded up to a millisecond) when the quota is
// full again; refused requests and peeks (cost 0) write nothing. A refund
// (negative cost) sets the lowered TAT with its PEXPIRE, or DELs the key
// when it leaves the quota full (the key would otherwise need a PEXPIRE of
// 0, which SET rejects); on an absent key it writes nothing. The script
// touches key alone, so a key built by store.Key works on a Cluster.
// WithReplicaAck does not apply to quotas.
//
// AllowN fails with an error matching store.ErrInvalid when key is empty or
// r.Check(cost) fails, with a script error, changing nothing, when key holds
// anything but a TAT (a lock, say), and with the client's error when Redis
// does not answer (matching store.ErrNotApplied when the command was never
// sent).
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if key == "" {
		return store.Decision{}, fmt.Errorf("%w: redisstore: empty key", errInvalid)
	}
	if err := r.Check(cost); err != nil {
		return store.Decision{}, fmt.Errorf("redisstore: %w", err)
	}
	t := int64(r.Interval() / time.Microsecond)
	args := []any{t, r.Burst, cost}
	if s.quotaNow != nil {
		args = append(args, s.quotaNow().UnixMicro())
	}
	v, err := gcraScript.Run(ctx, s.client, []string{key}, args...).Int64()
	if err != nil {
		return store.Decision{}, callError("quota", err)
	}
	return decision(v, t, int64(r.Burst), int64(cost)), nil
}

// decision decodes the GCRA script's reply (redislua.Decision).
var decision = redislua.Decision
