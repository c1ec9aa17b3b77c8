package rueidisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// trackConn is conn on a client of one master (not a Cluster), which can
// track keys.
type trackConn struct{ conn }

// Track opens the near cache's tracking connection: a dedicated RESP3
// connection of the client on which CLIENT TRACKING ON BCAST reports
// changes as invalidation pushes.
func (a trackConn) Track(prefixes []string) redisalgo.Tracking {
	return &tracking{c: a.c, prefixes: prefixes, keys: make(chan []string, 64), done: make(chan struct{})}
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
