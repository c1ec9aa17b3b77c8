package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// healthInterval is how long the receive loop waits for a message before it
// pings the server, so that a connection that died silently is noticed and
// replaced (go-redis then subscribes again to every channel).
const healthInterval = 30 * time.Second

// errClosed is returned by Watch after Close.
var errClosed = errors.New("redisstore: store closed")

// watcher multiplexes every Watch of a Store over one Pub/Sub connection:
// a thousand waiters on a hundred keys cost one connection and a hundred
// channel subscriptions, not a thousand connections.
//
// Two goroutines own the connection. The manager sends SUBSCRIBE and
// UNSUBSCRIBE, one batch at a time, so that the commands for one channel
// reach Redis in the order they were decided (a waiter leaving and a new one
// arriving cannot leave the channel unsubscribed). The receiver reads
// confirmations and messages and fans messages out to the waiters. Watch and
// the stop functions only change maps under mu and kick the manager, so they
// never wait for the network except for the subscription confirmation that
// Watch promises.
type watcher struct {
	s *Store

	mu      sync.Mutex
	ps      *redis.PubSub // nil until the first Watch
	entries map[string]*watchEntry
	dirty   map[string]struct{} // channels the manager must look at
	sent    map[string]bool     // channels subscribed and not unsubscribed since
	closed  bool

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// watchEntry is one watched channel and its waiters. An entry lives while
// it has waiters; a channel that is watched again gets a new entry.
type watchEntry struct {
	waiters map[chan struct{}]struct{}
	ready   chan struct{} // closed once subscribed, or when err is set
	settled bool          // ready is closed
	subSent bool          // the manager sent SUBSCRIBE for this entry
	err     error
}

func (w *watcher) init(s *Store) {
	w.s = s
	w.entries = make(map[string]*watchEntry)
	w.dirty = make(map[string]struct{})
	w.sent = make(map[string]bool)
	w.kick = make(chan struct{}, 1)
	w.done = make(chan struct{})
}

// Watch returns a channel that receives a value after key is released by
// Release (the release script publishes on key+":released"), and the stop
// function the caller must call when it no longer waits.
//
// All watches of a Store share one Pub/Sub connection, created by the first
// Watch, with one channel subscription per watched key that is dropped when
// its last waiter stops. Watch returns once Redis confirmed the
// subscription, so a release after Watch returned is not missed while the
// connection lives. It returns an error when the subscription cannot be set
// up within the watch timeout (WithWatchTimeout) or ctx, or after Close; the
// Limiter then polls. A release during a reconnection can be missed, which
// costs the waiter one backoff interval, never correctness: the waiter
// retries the acquisition either way.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if key == "" {
		return nil, nil, fmt.Errorf("%w: redisstore: empty key", errInvalid)
	}
	return s.watch.watch(ctx, channel(key))
}

func (w *watcher) watch(ctx context.Context, ch string) (<-chan struct{}, func(), error) {
	wake := make(chan struct{}, 1)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, nil, errClosed
	}
	if w.ps == nil {
		w.start()
	}
	e := w.entries[ch]
	if e == nil {
		e = &watchEntry{waiters: make(map[chan struct{}]struct{}), ready: make(chan struct{})}
		w.entries[ch] = e
		w.markDirty(ch)
	}
	e.waiters[wake] = struct{}{}
	w.mu.Unlock()

	stop := sync.OnceFunc(func() { w.leave(ch, e, wake) })
	timer := time.NewTimer(w.s.watchTimeout)
	defer timer.Stop()
	select {
	case <-e.ready:
		w.mu.Lock()
		err := e.err
		w.mu.Unlock()
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("redisstore: watch: %w", err)
		}
		return wake, stop, nil
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	case <-timer.C:
		stop()
		return nil, nil, fmt.Errorf("redisstore: watch: subscription not confirmed within %v", w.s.watchTimeout)
	case <-w.done:
		stop()
		return nil, nil, errClosed
	}
}

// start creates the shared Pub/Sub and its goroutines; mu is held.
func (w *watcher) start() {
	// Subscribe without channels does not connect yet; the receiver
	// connects on its first read.
	w.ps = w.s.client.Subscribe(context.Background())
	w.wg.Add(2)
	go w.receive(w.ps)
	go w.manage(w.ps)
}

// leave removes one waiter; the last waiter of a channel drops the entry
// and has the manager unsubscribe.
func (w *watcher) leave(ch string, e *watchEntry, wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(e.waiters, wake)
	if len(e.waiters) == 0 && w.entries[ch] == e {
		delete(w.entries, ch)
		w.markDirty(ch)
	}
}

// markDirty queues ch for the manager; mu is held.
func (w *watcher) markDirty(ch string) {
	w.dirty[ch] = struct{}{}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// manage sends the SUBSCRIBE and UNSUBSCRIBE commands that bring Redis in
// line with the entries, one batch per kick.
func (w *watcher) manage(ps *redis.PubSub) {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-w.kick:
		}
		var sub, unsub []string
		w.mu.Lock()
		for ch := range w.dirty {
			e := w.entries[ch]
			switch {
			case e != nil && !e.settled:
				// Also when sent[ch]: a waiter left and another came
				// before this batch, so the entry is new and needs its
				// own confirmation; SUBSCRIBE to a subscribed channel
				// is harmless and confirmed again.
				e.subSent = true
				w.sent[ch] = true
				sub = append(sub, ch)
			case e == nil && w.sent[ch]:
				delete(w.sent, ch)
				unsub = append(unsub, ch)
			}
		}
		clear(w.dirty)
		w.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), w.s.watchTimeout)
		if len(sub) > 0 {
			if err := ps.Subscribe(ctx, sub...); err != nil {
				w.fail(sub, err)
			}
		}
		if len(unsub) > 0 {
			// An error here leaves a subscription nobody listens to;
			// its messages are dropped, and go-redis forgets the
			// channel, so a reconnection does not restore it.
			_ = ps.Unsubscribe(ctx, unsub...)
		}
		cancel()
	}
}

// fail settles the unconfirmed entries of channels whose SUBSCRIBE could not
// be sent, so that their Watch calls return the error at once.
func (w *watcher) fail(chs []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range chs {
		if e := w.entries[ch]; e != nil && e.subSent && !e.settled {
			e.err = err
			e.settled = true
			close(e.ready)
		}
	}
}

// receive reads the shared connection until Close: subscription
// confirmations settle entries, messages wake waiters. go-redis reconnects
// and subscribes again by itself after a connection error; the loop backs
// off while Redis is unreachable.
func (w *watcher) receive(ps *redis.PubSub) {
	defer w.wg.Done()
	ctx := context.Background()
	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.ReceiveTimeout(ctx, healthInterval)
		select {
		case <-w.done:
			return
		default:
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = ps.Ping(ctx)
				continue
			}
			select {
			case <-w.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				w.confirm(m.Channel)
			}
		case *redis.Message:
			w.notify(m.Channel)
		}
	}
}

func (w *watcher) confirm(ch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.entries[ch]; e != nil && e.subSent && !e.settled {
		e.settled = true
		close(e.ready)
	}
}

// notify wakes every waiter of ch without blocking: a waiter that has not
// consumed the previous signal keeps that one.
func (w *watcher) notify(ch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entries[ch]
	if e == nil {
		return
	}
	for wake := range e.waiters {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

func (w *watcher) close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.done)
	ps := w.ps
	w.mu.Unlock()
	if ps != nil {
		// Closing the connection ends the receiver's blocking read. Its
		// error is of no use to the caller: the store is done with it.
		_ = ps.Close()
	}
	w.wg.Wait()
	return nil
}
