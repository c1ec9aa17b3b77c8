package redisalgo

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Watch returns a channel that receives a value after key is released or
// recorded (the scripts publish on key+":released"), and the stop function
// the caller must call when it no longer waits. It returns once Redis
// confirmed the subscription, so a release after it is not missed while the
// connection lives; it fails when that takes longer than the watch timeout
// or ctx, or after Close, and the Limiter then polls. When the connection
// is lost every waiter is woken, to look at its key again.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if key == "" {
		return nil, nil, s.check(key, "-", 1)
	}
	return s.watch.watch(ctx, channel(key))
}

// healthInterval is how long the Pub/Sub connection may stay silent before
// the receiver pings it, so that a connection that died silently is noticed.
const healthInterval = 30 * time.Second

// The receiver's pause after losing the connection doubles up to maxBackoff.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// watcher multiplexes every Watch of a Store over one PubSub connection, with
// one subscription per watched channel, dropped with its last waiter: a
// thousand waiters on a hundred keys cost one connection.
//
// Two goroutines own the connection. The manager sends SUBSCRIBE and
// UNSUBSCRIBE, a batch per kick, so that the commands for one channel reach
// Redis in the order they were decided; the receiver reads confirmations and
// messages, and replaces a lost connection (the manager then subscribes
// every channel again). Watch and stop only change the maps under mu. Every
// call the goroutines make ends within the watch timeout and when Close
// cancels ctx; Close waits for them at most twice that.
type watcher struct {
	s *Store

	mu      sync.Mutex
	ps      PubSub // nil until the first Watch
	entries map[string]*watchEntry
	dirty   map[string]struct{} // channels the manager must look at
	sent    map[string]bool     // channels subscribed on ps
	closed  bool
	running int           // goroutines that Close waits for
	stopped chan struct{} // closed when running is 0 after Close
	checked chan struct{} // closed when the start-up check is over

	kick        chan struct{}
	ctx         context.Context // cancelled by Close
	cancel      context.CancelFunc
	done        <-chan struct{}
	waitTimeout time.Duration
}

// watchEntry is one watched channel and its waiters.
type watchEntry struct {
	waiters map[chan struct{}]struct{}
	ready   chan struct{} // closed once subscribed, or when err is set
	settled bool          // ready is closed
	subSent bool          // SUBSCRIBE was sent for this entry
	err     error
}

func (w *watcher) init(s *Store) {
	w.s, w.waitTimeout = s, s.cfg.watchTimeout
	w.entries, w.dirty, w.sent = map[string]*watchEntry{}, map[string]struct{}{}, map[string]bool{}
	w.kick, w.stopped, w.checked = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.done = w.ctx.Done()
}

// spawn runs fn on a goroutine that Close waits for; mu is held.
func (w *watcher) spawn(fn func()) {
	w.running++
	go func() {
		defer func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.running--; w.running == 0 && w.closed {
				close(w.stopped)
			}
		}()
		fn()
	}()
}

// background runs fn on a goroutine that Close cancels and waits for; it
// reports false, running nothing, after Close.
func (w *watcher) background(fn func(ctx context.Context)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.spawn(func() { fn(w.ctx) })
	}
	return !w.closed
}

// callContext bounds one background call by the watch timeout and Close.
func (w *watcher) callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(w.ctx, w.waitTimeout)
}

func (w *watcher) watch(ctx context.Context, ch string) (<-chan struct{}, func(), error) {
	wake := make(chan struct{}, 1)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, nil, fmt.Errorf("%s: store closed", w.s.name)
	}
	if w.ps == nil {
		w.ps = w.s.conn.PubSub()
		w.spawn(w.receive)
		w.spawn(w.manage)
	}
	e := w.entries[ch]
	if e == nil {
		e = &watchEntry{waiters: map[chan struct{}]struct{}{}, ready: make(chan struct{})}
		w.entries[ch] = e
		w.markDirty(ch)
	}
	e.waiters[wake] = struct{}{}
	w.mu.Unlock()

	stop := sync.OnceFunc(func() { w.leave(ch, e, wake) })
	timer := time.NewTimer(w.waitTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-e.ready:
		w.mu.Lock()
		err = e.err
		w.mu.Unlock()
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("subscription not confirmed within %v", w.waitTimeout)
	case <-w.done:
		err = fmt.Errorf("store closed")
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("%s: watch: %w", w.s.name, err)
	}
	return wake, stop, nil
}

// leave removes a waiter; the last one of a channel has it unsubscribed.
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

// manage brings the connection's subscriptions in line with the entries.
func (w *watcher) manage() {
	for {
		select {
		case <-w.done:
			return
		case <-w.kick:
		}
		ps, sub, unsub := w.batch()
		ctx, cancel := w.callContext()
		if len(sub) > 0 {
			if err := ps.Subscribe(ctx, sub...); err != nil {
				w.settle(sub, err)
			}
		}
		if len(unsub) > 0 {
			_ = ps.Unsubscribe(ctx, unsub...) // a stray subscription only drops its messages
		}
		cancel()
	}
}

// batch takes the dirty channels: those to subscribe (a new entry needs its
// own confirmation even when its channel is subscribed, and after a
// reconnection every entry needs one), and those to unsubscribe.
func (w *watcher) batch() (ps PubSub, sub, unsub []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.dirty {
		e := w.entries[ch]
		switch {
		case e != nil && (!e.settled || !w.sent[ch]):
			e.subSent = !e.settled
			w.sent[ch] = true
			sub = append(sub, ch)
		case e == nil && w.sent[ch]:
			delete(w.sent, ch)
			unsub = append(unsub, ch)
		}
	}
	clear(w.dirty)
	return w.ps, sub, unsub
}

// settle ends the wait of the unconfirmed entries of chs, with err (nil
// when Redis confirmed).
func (w *watcher) settle(chs []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range chs {
		if e := w.entries[ch]; e != nil && e.subSent && !e.settled {
			e.err, e.settled = err, true
			close(e.ready)
		}
	}
}

// receive reads the connection until Close. An idle read is no error; after
// healthInterval of silence it pings.
func (w *watcher) receive() {
	backoff, heard := minBackoff, time.Now()
	for {
		w.mu.Lock()
		ps := w.ps
		w.mu.Unlock()
		ctx, cancel := w.callContext()
		ch, subscribed, ok, err := ps.Receive(ctx, w.waitTimeout)
		cancel()
		select {
		case <-w.done:
			return
		default:
		}
		switch {
		case err != nil:
			w.reconnect(ps)
			select {
			case <-w.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
		case !ok && time.Since(heard) >= healthInterval:
			heard = time.Now()
			ctx, cancel := w.callContext()
			_ = ps.Ping(ctx)
			cancel()
		case !ok:
		case subscribed:
			heard, backoff = time.Now(), minBackoff
			w.settle([]string{ch}, nil)
		default:
			heard, backoff = time.Now(), minBackoff
			w.notify(ch)
		}
	}
}

// reconnect replaces the lost connection old: the manager subscribes every
// channel again on the new one, and every waiter looks at its key again, a
// release may have been missed.
func (w *watcher) reconnect(old PubSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.ps != old {
		return
	}
	w.ps = w.s.conn.PubSub()
	w.spawn(func() { _ = old.Close() })
	clear(w.sent)
	for ch := range w.entries {
		w.markDirty(ch)
		w.wake(ch)
	}
}

// notify wakes every waiter of ch.
func (w *watcher) notify(ch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wake(ch)
}

// wake signals the waiters of ch without blocking: one that has a signal
// pending needs no second; mu is held.
func (w *watcher) wake(ch string) {
	if e := w.entries[ch]; e != nil {
		for c := range e.waiters {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
}

// close cancels the background calls, closes the connection on a goroutine
// of its own (a client reconnecting to a hung server may hold it), and waits
// for every goroutine at most twice the watch timeout.
func (w *watcher) close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		w.cancel()
		if ps := w.ps; ps != nil {
			w.spawn(func() { _ = ps.Close() })
		}
		if w.running == 0 {
			close(w.stopped)
		}
	}
	w.mu.Unlock()
	timer := time.NewTimer(2 * w.waitTimeout)
	defer timer.Stop()
	select {
	case <-w.stopped:
		return nil
	case <-timer.C:
		return fmt.Errorf("%s: close: Redis did not answer within %v; the store's background goroutines "+
			"end when the client's timeouts expire", w.s.name, 2*w.waitTimeout)
	}
}
