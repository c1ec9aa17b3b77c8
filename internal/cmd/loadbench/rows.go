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

	"github.com/go-throttle/throttle/internal/storekit"
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

// rueidisVariant is a rueidis client and the store on it: rueidis's
// defaults, or with a MaxFlushDelay.
type rueidisVariant struct {
	label  string // appended to the rows' names
	client rueidis.Client
	store  *redisstore.Store
}

// clients holds what the rows run on.
type clients struct {
	goredis  *redis.Client
	autopipe *redis.AutoPipeliner
	rs       *redisstore.Store
	rueidis  []rueidisVariant
}

// newClients makes the clients on addr: go-redis (plain and
// AutoPipeline), and rueidis with its defaults and, when flushDelay is
// positive, with that MaxFlushDelay.
func newClients(addr string, flushDelay time.Duration) (*clients, error) {
	c := &clients{goredis: redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})}
	ap, err := c.goredis.AutoPipeline()
	if err != nil {
		return nil, fmt.Errorf("go-redis AutoPipeline: %w", err)
	}
	c.autopipe = ap
	c.rs = redisstore.New(c.goredis)
	delays := []time.Duration{0}
	if flushDelay > 0 {
		delays = append(delays, flushDelay)
	}
	for _, d := range delays {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, MaxFlushDelay: d})
		if err != nil {
			c.close()
			return nil, fmt.Errorf("rueidis client: %w", err)
		}
		label := ""
		if d > 0 {
			label = fmt.Sprintf(" (MaxFlushDelay %v)", d)
		}
		c.rueidis = append(c.rueidis, rueidisVariant{label, rc, rueidisstore.New(rc)})
	}
	return c, nil
}

func (c *clients) close() {
	for _, v := range c.rueidis {
		_ = v.store.Close()
		v.client.Close()
	}
	_ = c.rs.Close()
	_ = c.autopipe.Close()
	_ = c.goredis.Close()
}

// counter hands out the calls' indexes.
func counter() func() int {
	var n atomic.Int64
	return func() int { return int(n.Add(1) - 1) }
}

// named is a store of the table and the name its rows carry.
type named struct {
	name string
	st   store.Store
}

// rows returns the table's rows; the first is the baseline of the ratios.
func (c *clients) rows() ([]row, error) {
	ctx := context.Background()
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
	}
	for _, v := range c.rueidis {
		rows = append(rows, row{"rueidis SET NX PX (raw)" + v.label, func(_, keys []string) func() error {
			next := counter()
			return func() error {
				cmd := v.client.B().Set().Key(keys[next()]).Value("token").Nx().PxMilliseconds(ttl.Milliseconds()).Build()
				return v.client.Do(ctx, cmd).Error()
			}
		}})
	}
	rows = append(rows, row{"go-redis SetNX + EVALSHA release (raw lock)", func(_, keys []string) func() error {
		next := counter()
		return func() error {
			k := keys[next()]
			if err := okBool(c.goredis.SetNX(ctx, k, "token", ttl).Result()); err != nil {
				return err
			}
			return release.Run(ctx, c.goredis, []string{k}, "token").Err()
		}
	}})

	stores := []named{{"redisstore", c.rs}}
	for _, v := range c.rueidis {
		stores = append(stores, named{"rueidisstore" + v.label, v.store})
	}
	for _, s := range stores {
		rows = append(rows, row{s.name + " Store.Acquire", storeAcquire(s.st)})
	}
	stores = append(stores, named{"memstore", memstore.New()})
	rate := throttle.Rate{Limit: 100, Window: time.Minute}
	var acquire, cycle, allow []row
	for _, s := range stores {
		l, err := throttle.NewLock(s.st, throttle.LockConfig{Name: "loadbench", TTL: ttl})
		if err != nil {
			return nil, err
		}
		q, err := throttle.NewQuota(s.st, throttle.QuotaConfig{Name: "loadbench-quota"})
		if err != nil {
			return nil, err
		}
		acquire = append(acquire, row{"Lock.Acquire · " + s.name, func(ids, _ []string) func() error {
			next := counter()
			return func() error { _, err := l.Acquire(ctx, ids[next()]); return err }
		}})
		cycle = append(cycle, row{"Lock.Acquire + Release · " + s.name, func(ids, _ []string) func() error {
			next := counter()
			return func() error {
				lease, err := l.Acquire(ctx, ids[next()])
				if err != nil {
					return err
				}
				return lease.Release(ctx)
			}
		}})
		allow = append(allow, row{"Quota.Allow · " + s.name, func(ids, _ []string) func() error {
			next := counter()
			return func() error {
				d, err := q.Allow(ctx, ids[next()], rate, 1)
				if err == nil && !d.Allowed {
					err = errors.New("a fresh quota refused a request")
				}
				return err
			}
		}})
	}
	rows = append(rows, acquire...)
	rows = append(rows, cycle...)
	return append(rows, allow...), nil
}

// storeAcquire is a row's operation on a store's own Acquire, without a
// Lock: what the store costs by itself.
func storeAcquire(s store.Store) func(ids, keys []string) func() error {
	return func(_, keys []string) func() error {
		next := counter()
		token := storekit.NewToken()
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
		keys[i] = storekit.Key("loadbench", rowName, ids[i])
	}
	return ids, keys
}
