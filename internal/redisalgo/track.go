package redisalgo

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"
)

// Tracker is a Conn that can open the near cache's tracking connections.
type Tracker interface {
	// Track returns new tracking connections, not started, by address: one
	// to each master of a Cluster, read from the servers now, or one, under
	// "", to the master of a client of one master. Each runs CLIENT
	// TRACKING ON ... BCAST PREFIX p for each prefix when it connects. An
	// error wrapping ErrNoTracking means this client cannot track keys.
	Track(ctx context.Context, prefixes []string) (map[string]Tracking, error)
	// Masters returns the addresses of a Cluster's masters, read from the
	// servers now, sorted as Track's; nil for a client of one master.
	Masters(ctx context.Context) ([]string, error)
}

// Tracking is one tracking connection.
type Tracking interface {
	// Start connects, turns tracking on and subscribes to the
	// invalidations, returning once Redis confirmed; an error wrapping
	// ErrNoTracking means the server refused CLIENT TRACKING.
	Start(ctx context.Context) error
	// Receive waits at most d for keys Redis invalidated; ok is false when
	// none came, an error is a lost connection (or a FLUSHALL).
	Receive(ctx context.Context, d time.Duration) (keys []string, ok bool, err error)
	Ping(ctx context.Context) error
	Close() error
}

// ErrNoTracking marks a connection that cannot track keys: the server
// refused CLIENT TRACKING (an ACL, a managed service), or a RESP2 rueidis
// connection. The near cache stays off.
var ErrNoTracking = errors.New("CLIENT TRACKING is unavailable")

// nearPoll bounds each wait for an invalidation (the receiving goroutines
// look at their context in between); nearPing is the silence after which
// one pings its connection; nearTopology, how often the masters of a
// Cluster are read again, to find a change that the client followed out of
// the store's sight (a failover, a slot given to a new master).
const nearPoll, nearPing, nearTopology = 100 * time.Millisecond, 5 * time.Second, time.Second

// Moved tells s's near cache that its client met a change of a Cluster's
// topology (a MOVED or ASK reply, a node it did not know): every entry is
// dropped, and none is kept until the masters were read again and each has
// a tracking connection.
func Moved(s *Store) {
	n := &s.near
	if n.cache == nil {
		return
	}
	n.mu.Lock()
	n.topo++
	n.cache.Ready(false)
	n.mu.Unlock()
	n.poke()
}

// poke wakes the tracking goroutine.
func (n *near) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// topology returns the count of Moved calls, to give ready.
func (n *near) topology() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.topo
}

// ready lets the cache keep refusals unless Moved was called since
// topology returned g.
func (n *near) ready(g uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.topo == g {
		n.cache.Ready(true)
	}
}

// track keeps a tracking connection to every master, for every wanted
// prefix, until Close, the cache answering only while all are confirmed:
// a lost connection, a new prefix, a new set of masters or a FLUSHALL
// empties it.
func (s *Store) track(ctx context.Context) {
	n, backoff := &s.near, minBackoff
	for ctx.Err() == nil {
		select {
		case <-n.kick: // what is read next has it
		default:
		}
		n.mu.Lock()
		prefixes := slices.Sorted(maps.Keys(n.wanted))
		n.mu.Unlock()
		g := n.topology()
		ts, err := s.startTracking(ctx, prefixes)
		if err == nil {
			set := map[string]bool{}
			for _, p := range prefixes {
				set[p] = true
			}
			n.tracked.Store(&set)
			n.ready(g)
			backoff = minBackoff
			err = s.listen(ctx, ts)
			n.cache.Ready(false)
			s.watch.running.Go(func() { closeTracking(ts) })
		}
		switch {
		case errors.Is(err, ErrNoTracking):
			s.cfg.log.Info(s.name+": the near cache of refusals is off", "err", err)
			n.off.Store(true)
			return
		case err != nil && ctx.Err() == nil:
			s.cfg.log.Debug(s.name+": near cache: tracking connection lost", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// startTracking opens and starts a tracking connection to each master,
// closing them all on an error.
func (s *Store) startTracking(ctx context.Context, prefixes []string) (map[string]Tracking, error) {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.watchTimeout)
	defer cancel()
	ts, err := s.near.tr.Track(sctx, prefixes)
	for _, t := range ts {
		if err == nil {
			err = t.Start(sctx)
		}
	}
	if err != nil {
		closeTracking(ts)
		return nil, err
	}
	return ts, nil
}

func closeTracking(ts map[string]Tracking) {
	for _, t := range ts {
		_ = t.Close()
	}
}

// listen applies the invalidations of ts until one is lost (its error), a
// new prefix is wanted or the masters changed (nil). On a Cluster it reads
// the masters again every nearTopology and after Moved, and lets the cache
// keep refusals again when they are those ts track.
func (s *Store) listen(ctx context.Context, ts map[string]Tracking) error {
	n := &s.near
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	lost := make(chan error, len(ts))
	for _, t := range ts {
		wg.Go(func() { lost <- s.follow(lctx, t) })
	}
	var tick <-chan time.Time
	if _, one := ts[""]; !one {
		t := time.NewTicker(nearTopology)
		defer t.Stop()
		tick = t.C
	}
	masters := slices.Sorted(maps.Keys(ts))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-lost:
			return err
		case <-n.kick:
			n.mu.Lock()
			grown := len(n.wanted) != len(*n.tracked.Load())
			n.mu.Unlock()
			if grown {
				return nil
			}
		case <-tick:
		}
		g := n.topology()
		mctx, cancel := context.WithTimeout(ctx, s.cfg.watchTimeout)
		now, err := n.tr.Masters(mctx)
		cancel()
		switch {
		case err != nil:
			return err
		case now != nil && !slices.Equal(now, masters):
			s.cfg.log.Debug(s.name+": near cache: the Cluster's masters changed", "was", masters, "now", now)
			return nil
		}
		n.ready(g)
	}
}

// follow applies t's invalidations until ctx ends (nil) or t is lost (its
// error), pinging t after nearPing of silence.
func (s *Store) follow(ctx context.Context, t Tracking) error {
	heard := time.Now()
	for ctx.Err() == nil {
		keys, ok, err := t.Receive(ctx, nearPoll)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			return err
		case ok:
			heard = time.Now()
			s.near.cache.Invalidate(keys...)
		case time.Since(heard) >= nearPing:
			heard = time.Now()
			pctx, cancel := context.WithTimeout(ctx, s.cfg.watchTimeout)
			err = t.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		}
	}
	return nil
}
