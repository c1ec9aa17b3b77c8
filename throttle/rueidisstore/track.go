package rueidisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Track opens the near cache's tracking connections: on a dedicated RESP3
// connection of the client (of its node client of each master of a
// Cluster), CLIENT TRACKING ON BCAST reports changes as invalidation pushes.
func (a conn) Track(ctx context.Context, prefixes []string) (map[string]redisalgo.Tracking, error) {
	if a.c.Mode() != rueidis.ClientModeCluster {
		return map[string]redisalgo.Tracking{"": newTracking(a.c, prefixes)}, nil
	}
	masters, err := a.Masters(ctx)
	if err != nil {
		return nil, err
	}
	nodes, ts := a.c.Nodes(), map[string]redisalgo.Tracking{}
	for _, m := range masters {
		n, ok := nodes[m]
		if !ok {
			return nil, fmt.Errorf("rueidisstore: master %s is not among the client's nodes yet", m)
		}
		ts[m] = newTracking(n, prefixes)
	}
	return ts, nil
}

// Masters reads a Cluster's masters with CLUSTER SLOTS: the first node of
// each slot range, addressed as rueidis addresses its nodes.
func (a conn) Masters(ctx context.Context) ([]string, error) {
	if a.c.Mode() != rueidis.ClientModeCluster {
		return nil, nil
	}
	ranges, err := a.c.Do(ctx, a.c.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, r := range ranges {
		v, err := r.ToArray()
		if err != nil || len(v) < 3 {
			return nil, fmt.Errorf("rueidisstore: unexpected CLUSTER SLOTS entry: %v", r)
		}
		node, err := v[2].ToArray()
		if err != nil || len(node) < 2 {
			return nil, fmt.Errorf("rueidisstore: unexpected CLUSTER SLOTS node: %v", v[2])
		}
		host, _ := node[0].ToString()
		port, _ := node[1].AsInt64()
		if addr := net.JoinHostPort(host, strconv.FormatInt(port, 10)); !slices.Contains(addrs, addr) {
			addrs = append(addrs, addr)
		}
	}
	slices.Sort(addrs)
	return addrs, nil
}

func newTracking(c rueidis.Client, prefixes []string) *tracking {
	return &tracking{c: c, prefixes: prefixes, keys: make(chan []string, 64), done: make(chan struct{})}
}

// errFlushed is a FLUSHALL's invalidation, of every key.
var errFlushed = errors.New("rueidisstore: every key invalidated (FLUSHALL)")

type tracking struct {
	c        rueidis.Client
	prefixes []string
	dc       rueidis.DedicatedClient
	cancel   func()
	lost     <-chan error
	keys     chan []string // nil: every key
	done     chan struct{}
	once     sync.Once
}

func (t *tracking) Start(ctx context.Context) error {
	t.dc, t.cancel = t.c.Dedicate()
	t.lost = t.dc.SetOnInvalidations(func(ms []rueidis.RedisMessage) {
		var keys []string
		if ms != nil {
			keys = make([]string, 0, len(ms))
			for _, m := range ms {
				k, _ := m.ToString()
				keys = append(keys, k)
			}
		}
		select {
		case t.keys <- keys:
		case <-t.done:
		}
	})
	info, err := t.dc.Do(ctx, t.dc.B().ClientInfo().Build()).ToString()
	if err == nil && !strings.Contains(info, " resp=3") {
		return fmt.Errorf("%w: the connection speaks RESP2, which gets no invalidation pushes", redisalgo.ErrNoTracking)
	}
	if err == nil {
		args := []string{"ON", "BCAST"}
		for _, p := range t.prefixes {
			args = append(args, "PREFIX", p)
		}
		err = t.dc.Do(ctx, t.dc.B().Arbitrary("CLIENT", "TRACKING").Args(args...).Build()).Error()
	}
	if _, refused := rueidis.IsRedisErr(err); refused {
		return fmt.Errorf("%w: %w", redisalgo.ErrNoTracking, err)
	}
	return err
}

func (t *tracking) Receive(ctx context.Context, d time.Duration) ([]string, bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case keys := <-t.keys:
		if keys == nil {
			return nil, false, errFlushed
		}
		return keys, true, nil
	case err := <-t.lost:
		return nil, false, errors.Join(errors.New("rueidisstore: tracking connection lost"), err)
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, false, nil
}

func (t *tracking) Ping(ctx context.Context) error {
	return t.dc.Do(ctx, t.dc.B().Ping().Build()).Error()
}

func (t *tracking) Close() error {
	t.once.Do(func() {
		close(t.done)
		if t.cancel != nil {
			t.cancel()
		}
	})
	return nil
}
