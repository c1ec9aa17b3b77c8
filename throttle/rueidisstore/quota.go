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
	px, newKeyStep := gc.NewKeyPX(cost)
	if newKeyStep && s.setFirst() {
		d, charged, err := s.chargeNew(ctx, key, px, gc, r, cost)
		s.returning.Observe(err == nil && !charged)
		if err != nil || charged {
			return d, err
		}
		// The key exists: the script decides, a second round trip.
	}
	script := gcraScript
	if gc.Millis {
		script = gcraMillisScript
	}
	args := []string{strconv.FormatInt(gc.Interval, 10), strconv.Itoa(r.Burst), strconv.Itoa(cost)}
	if gc.Now != 0 {
		args = append(args, strconv.FormatInt(gc.Now, 10))
	}
	v, err := script.Exec(ctx, s.client, []string{key}, args).AsInt64()
	if err != nil {
		return store.Decision{}, callError("quota", err)
	}
	if newKeyStep {
		s.returning.Observe(v != gc.NewKeyReply(cost))
	}
	return decision(v, gc.T, int64(r.Burst), int64(cost)), nil
}

// chargeNew charges a key that does not exist, as the script would, with
// SET key "" NX PX px (see redislua.GCRACall.NewKeyPX). charged is false
// when the key exists; nothing is written then.
func (s *Store) chargeNew(ctx context.Context, key string, px int64, gc redislua.GCRACall, r store.Rate, cost int) (d store.Decision, charged bool, err error) {
	cmd := s.client.B().Set().Key(key).Value("").Nx().PxMilliseconds(px).Build()
	switch err := s.client.Do(ctx, cmd).Error(); {
	case rueidis.IsRedisNil(err):
		return store.Decision{}, false, nil
	case err != nil:
		return store.Decision{}, false, callError("quota", err)
	}
	return decision(gc.NewKeyReply(cost), gc.T, int64(r.Burst), int64(cost)), true, nil
}

// setFirst reports whether a charge tries chargeNew before the script:
// under the test hook SetQuotaScripted (never), or while charges mostly
// find no key (returning), as redisstore decides.
func (s *Store) setFirst() bool {
	return !s.quotaScripted && !s.returning.Frequent()
}

// decision decodes the GCRA script's reply (redislua.Decision).
var decision = redislua.Decision
