package rueidisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota and store.Rate) in one round trip (see below), on the
// Redis server's clock, exactly as redisstore.Store.AllowN does (the same
// scripts, the same stored state): the two stores can share quota keys.
// Like redisstore, while most charges find no key it first charges a new
// key with SET NX PX, a plain command (a third of the script's server
// time), and runs the script only when the key exists: a second round
// trip, which it stops risking once about one charge in eight finds its
// key.
//
// AllowN fails with an error matching store.ErrInvalid when key is empty or
// r.Check(cost) fails, with a script error, changing nothing, when key holds
// anything but a quota, and with the client's error when Redis does not
// answer.
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if key == "" {
		return store.Decision{}, fmt.Errorf("%w: rueidisstore: empty key", store.ErrInvalid)
	}
	if err := r.Check(cost); err != nil {
		return store.Decision{}, fmt.Errorf("rueidisstore: %w", err)
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
	script := gcraScript
	if gc.Millis {
		script = gcraMillisScript
	}
	args := []string{strconv.FormatInt(gc.Interval, 10), strconv.Itoa(r.Burst), strconv.Itoa(cost)}
	if gc.Now != 0 {
		args = append(args, strconv.FormatInt(gc.Now, 10))
	}
	return script.Exec(ctx, s.client, []string{key}, args).AsInt64()
}

// setNew is the new-key step of a charge (see redislua.GCRACall.Charge):
// SET key "" NX PX px. charged is false when the key exists; nothing is
// written then.
func (s *Store) setNew(ctx context.Context, key string, px int64) (charged bool, err error) {
	cmd := s.client.B().Set().Key(key).Value("").Nx().PxMilliseconds(px).Build()
	switch err := s.client.Do(ctx, cmd).Error(); {
	case rueidis.IsRedisNil(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// setFirst reports whether a charge tries setNew before the script:
// under the test hook SetQuotaScripted (never), or while charges mostly
// find no key (returning), as redisstore decides.
func (s *Store) setFirst() bool {
	return !s.quotaScripted && !s.returning.Frequent()
}

// decision decodes the GCRA script's reply (redislua.Decision).
var decision = redislua.Decision
