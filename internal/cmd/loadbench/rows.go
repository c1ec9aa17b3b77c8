package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// ttl is the lifetime of every key the run takes: long enough that no key
// of a pass expires while the pass runs, short enough that Redis is empty
// again soon after.
const ttl = 10 * time.Second

// row is one line of the table: something that takes a key.
type row struct {
	name string
	// op returns the operation for one cell; ids[i] and keys[i] are the
	// i-th call's limiter id and stored key, all distinct.
	op func(ids, keys []string) func() error
}

// clients holds what the rows run on.
type clients struct {
	goredis  *redis.Client
	autopipe *redis.AutoPipeliner
	rueidis  rueidis.Client
	rs       *redisstore.Store
	rus      *rueidisstore.Store
}

func newClients(addr string) (*clients, error) {
	c := &clients{goredis: redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})}
	ap, err := c.goredis.AutoPipeline()
	if err != nil {
		return nil, fmt.Errorf("go-redis AutoPipeline: %w", err)
	}
	c.autopipe = ap
	c.rueidis, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return nil, fmt.Errorf("rueidis client: %w", err)
	}
	c.rs = redisstore.New(c.goredis)
	c.rus = rueidisstore.New(c.rueidis)
	return c, nil
}

func (c *clients) close() {
	_ = c.rs.Close()
	_ = c.rus.Close()
	_ = c.autopipe.Close()
	c.rueidis.Close()
	_ = c.goredis.Close()
}

// counter hands out the calls' indexes.
func counter() func() int {
	var n atomic.Int64
	return func() int { return int(n.Add(1) - 1) }
}

// rows returns the table's rows; the first is the baseline of the ratios.
func (c *clients) rows() ([]row, error) {
	ctx := context.Background()
	policy := throttle.Policy{Name: "loadbench", Window: ttl}
	quota := throttle.Policy{Name: "loadbench-quota", Mode: throttle.Quota, Limit: 100, Window: time.Minute}
	limiters := map[string]throttle.Store{"redisstore": c.rs, "rueidisstore": c.rus, "memstore": memstore.New()}
	lim := map[string]*throttle.Limiter{}
	quo := map[string]*throttle.Limiter{}
	for name, st := range limiters {
		l, err := throttle.New(st, policy)
		if err != nil {
			return nil, err
		}
		lim[name] = l
		if q, err := throttle.New(st, quota); err == nil {
			quo[name] = q
		}
	}
	release := redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	rows := []row{
		{"go-redis SetNX (raw, the baseline)", func(_, keys []string) func() error {
			next := counter()
			return func() error { return okBool(c.goredis.SetNX(ctx, keys[next()], "token", ttl).Result()) }
		}},
		{"go-redis AutoPipeline SetNX (raw)", func(_, keys []string) func() error {
			next := counter()
			return func() error { return okBool(c.autopipe.SetNX(ctx, keys[next()], "token", ttl).Result()) }
		}},
		{"rueidis SET NX PX (raw)", func(_, keys []string) func() error {
			next := counter()
			return func() error {
				cmd := c.rueidis.B().Set().Key(keys[next()]).Value("token").Nx().PxMilliseconds(ttl.Milliseconds()).Build()
				return c.rueidis.Do(ctx, cmd).Error()
			}
		}},
		{"go-redis SetNX + EVALSHA release (raw lock)", func(_, keys []string) func() error {
			next := counter()
			return func() error {
				k := keys[next()]
				if err := okBool(c.goredis.SetNX(ctx, k, "token", ttl).Result()); err != nil {
					return err
				}
				return release.Run(ctx, c.goredis, []string{k}, "token").Err()
			}
		}},
		{"redisstore Store.Acquire", storeAcquire(c.rs)},
		{"rueidisstore Store.Acquire", storeAcquire(c.rus)},
	}
	for _, name := range []string{"redisstore", "rueidisstore", "memstore"} {
		l := lim[name]
		rows = append(rows, row{"Limiter.Acquire · " + name, func(ids, _ []string) func() error {
			next := counter()
			return func() error { _, err := l.Acquire(ctx, ids[next()]); return err }
		}})
	}
	for _, name := range []string{"redisstore", "rueidisstore", "memstore"} {
		l := lim[name]
		rows = append(rows, row{"Limiter.Acquire + Release · " + name, func(ids, _ []string) func() error {
			next := counter()
			return func() error {
				lease, err := l.Acquire(ctx, ids[next()])
				if err != nil {
					return err
				}
				return lease.Release(ctx)
			}
		}})
	}
	for _, name := range []string{"redisstore", "rueidisstore", "memstore"} {
		q := quo[name]
		rows = append(rows, row{"Limiter.Allow (Quota) · " + name, func(ids, _ []string) func() error {
			next := counter()
			return func() error {
				d, err := q.Allow(ctx, ids[next()])
				if err == nil && !d.Allowed {
					err = errors.New("a fresh quota refused a request")
				}
				return err
			}
		}})
	}
	return rows, nil
}

// storeAcquire is a row's operation on a store's own Acquire, without the
// Limiter: what the store costs by itself.
func storeAcquire(s throttle.Store) func(ids, keys []string) func() error {
	return func(_, keys []string) func() error {
		next := counter()
		token := store.NewToken()
		return func() error {
			g, err := s.Acquire(context.Background(), store.Request{Key: keys[next()], Token: token, TTL: ttl})
			if err == nil && !g.Acquired {
				err = errors.New("a distinct key was held")
			}
			return err
		}
	}
}

// okBool turns a SetNX result into an error: every key of the run is
// distinct, so a refusal is a fault of the run.
func okBool(ok bool, err error) error {
	if err == nil && !ok {
		err = errors.New("a distinct key was held")
	}
	return err
}

// keysFor returns n distinct ids and their stored keys for one cell.
func keysFor(pass int, rowName string, conc, n int) (ids, keys []string) {
	ids, keys = make([]string, n), make([]string, n)
	base := strconv.Itoa(pass) + ":" + strconv.Itoa(conc) + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	for i := range n {
		ids[i] = base + strconv.Itoa(i)
		keys[i] = store.Key("loadbench", rowName, ids[i])
	}
	return ids, keys
}
