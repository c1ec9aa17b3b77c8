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

// healthInterval is how long the shared connection may stay silent before
// the receive loop pings the server, so that a connection that died silently
// is noticed and replaced (go-redis then subscribes again to every channel).
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
//
// The watcher also owns the store's other background goroutine, the
// start-up configuration check, so that Close stops and waits for all of
// them in one place.
//
// Every call the goroutines make into go-redis carries a context that ends
// within the watch timeout and is cancelled by Close. That matters because
// go-redis's PubSub holds its mutex while it (re)connects, and PubSub.Close
// needs that mutex: a receiver reconnecting to a hung Redis with an
// unbounded context held Close for the client's dial and read timeouts.
// Close therefore does not call PubSub.Close itself but has a goroutine do
// it, and waits for all goroutines at most closeWait.
type watcher struct {
	s *Store

	mu      sync.Mutex
	ps      *redis.PubSub // nil until the first Watch
	entries map[string]*watchEntry
	dirty   map[string]struct{} // channels the manager must look at
	sent    map[string]bool     // channels subscribed and not unsubscribed since
	closed  bool

	kick chan struct{}
	done chan struct{} // closed by close

	// ctx is cancelled by close; the goroutines derive their calls'
	// contexts from it, so that a dial in progress is abandoned at once.
	ctx    context.Context
	cancel context.CancelFunc

	// running counts the background goroutines still running; stopped is
	// closed once it is zero after close.
	running int
	stopped chan struct{}

	// checked is closed when the start-up configuration check is over
	// (or did not run); tests wait for it.
	checked chan struct{}
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
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.stopped = make(chan struct{})
	w.checked = make(chan struct{})
}

// closeWait is how long Close waits for the background goroutines: each of
// their calls into go-redis ends within the watch timeout (for a client with
// ContextTimeoutEnabled), so twice that leaves room for the call in
// progress and PubSub.Close.
func (w *watcher) closeWait() time.Duration { return 2 * w.s.watchTimeout }

// spawn runs fn on a new background goroutine that close waits for; mu is
// held. It must not be called after close.
func (w *watcher) spawn(fn func()) {
	w.running++
	go func() {
		defer w.exit()
		fn()
	}()
}

// exit marks a background goroutine as ended.
func (w *watcher) exit() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	if w.running == 0 && w.closed {
		close(w.stopped)
	}
}

// background runs fn(ctx) on a background goroutine that Close cancels and
// waits for. It reports false, and runs nothing, after Close.
func (w *watcher) background(fn func(ctx context.Context)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.spawn(func() { fn(w.ctx) })
	return true
}

// callContext returns the context of one background call into go-redis:
// it ends within the watch timeout and when Close cancels w.ctx.
func (w *watcher) callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(w.ctx, w.s.watchTimeout)
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
	ps := w.s.client.Subscribe(w.ctx)
	w.ps = ps
	w.spawn(func() { w.receive(ps) })
	w.spawn(func() { w.manage(ps) })
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

		ctx, cancel := w.callContext()
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
// off while Redis refuses connections.
//
// Each read waits at most the watch timeout, because go-redis reconnects
// inside the read with the read's context while it holds the PubSub's
// mutex, and Close must not wait longer than that for the mutex. An idle
// read that times out is not an error: the loop reads again at once, and
// pings once the connection has been silent for healthInterval, so that a
// connection that died silently is noticed and replaced.
func (w *watcher) receive(ps *redis.PubSub) {
	backoff := minBackoff
	lastHeard := time.Now()
	for {
		ctx, cancel := w.callContext()
		msg, err := ps.ReceiveTimeout(ctx, w.s.watchTimeout)
		cancel()
		select {
		case <-w.done:
			return
		default:
		}
		if err != nil {
			// A timeout is an idle connection, or a connection attempt
			// that Redis did not answer within the watch timeout: the
			// next read tries again (the time-out was the pause).
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if time.Since(lastHeard) >= healthInterval {
					lastHeard = time.Now()
					ctx, cancel := w.callContext()
					_ = ps.Ping(ctx)
					cancel()
				}
				continue
			}
			select {
			case <-w.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		lastHeard = time.Now()
		backoff = minBackoff
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

// The receiver's pause after a connection error that is not a time-out
// (Redis refusing connections, say) doubles from minBackoff to maxBackoff.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

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

// close stops the background goroutines: it cancels their calls, has one
// more goroutine close the Pub/Sub connection (which ends the receiver's
// read), and waits for all of them at most closeWait. When they do not stop
// in time, which happens only when Redis hangs and the client ignores
// context deadlines (no ContextTimeoutEnabled), it returns an error; the
// goroutines then end by themselves once go-redis gives up, after the
// client's DialTimeout and ReadTimeout. Calling close again waits again.
func (w *watcher) close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.done)
		w.cancel()
		if ps := w.ps; ps != nil {
			// PubSub.Close waits for go-redis's mutex, which a
			// goroutine reconnecting to a hung server holds; so it runs
			// on a goroutine of its own. Its error is of no use to the
			// caller: the store is done with the connection.
			w.spawn(func() { _ = ps.Close() })
		}
		if w.running == 0 {
			close(w.stopped)
		}
	}
	w.mu.Unlock()

	wait := w.closeWait()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-w.stopped:
		return nil
	case <-timer.C:
		return fmt.Errorf("redisstore: close: Redis did not answer within %v; "+
			"the store's background goroutines end when the client's timeouts expire", wait)
	}
}
