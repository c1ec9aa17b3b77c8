package rueidisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota and store.Rate) with one script and one round trip, on the
// Redis server's clock, exactly as redisstore.Store.AllowN does (the same
// scripts, the same stored state): the two stores can share quota keys.
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
	return decision(v, gc.T, int64(r.Burst), int64(cost)), nil
}

// decision decodes the GCRA script's reply (redislua.Decision).
var decision = redislua.Decision
