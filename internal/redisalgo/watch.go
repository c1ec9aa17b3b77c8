package redisalgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
)

// Watch returns a channel told when key is released or recorded, once Redis
// confirmed the subscription to key+":released" (so no later release is
// missed while the connection lives), and the stop function to call after.
// It fails after the watch timeout or Close; a lost connection wakes all.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if key == "" {
		return nil, nil, storekit.CheckLock(s.name, key, "-", 1)
	}
	if err := ctx.Err(); err != nil { // else select may pick a ready subscription
		return nil, nil, fmt.Errorf("%s: watch: %w", s.name, err)
	}
	w, ch, wake := &s.watch, channel(key), make(chan struct{}, 1)
	w.mu.Lock()
	if w.ps == nil && w.spawn(w.receive) {
		w.ps = s.conn.PubSub()
	}
	e := w.entries[ch]
	if e == nil {
		e = &watchEntry{waiters: map[chan struct{}]bool{}, ready: make(chan struct{})}
		w.entries[ch], w.dirty[ch] = e, true
	}
	e.waiters[wake] = true
	closed := w.closed
	w.mu.Unlock()
	stop := sync.OnceFunc(func() { w.leave(ch, e, wake) })
	timeout := time.After(w.timeout)
	if !closed { // else w.ctx is done
		w.flush(w.ctx)
	}
	var err error
	select {
	case <-e.ready:
		err = e.err // written before ready was closed
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = fmt.Errorf("subscription not confirmed within %v", w.timeout)
	case <-w.ctx.Done():
		err = errors.New("store closed")
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("%s: watch: %w", s.name, err)
	}
	return wake, stop, nil
}

// watcher multiplexes every Watch over one PubSub connection, one
// subscription per watched channel with waiters. flush sends what changed
// under mu one flush at a time, so that Redis gets each channel's commands in
// order; receive settles waits, wakes waiters and replaces a lost connection.
type watcher struct {
	s        *Store
	flushing sync.Mutex

	mu      sync.Mutex
	ps      PubSub                 // nil until the first Watch
	entries map[string]*watchEntry // by channel
	dirty   map[string]bool        // channels flush must look at
	sent    map[string]bool        // channels subscribed on ps
	closed  bool
	running sync.WaitGroup // goroutines Close waits for
	checked chan struct{}  // closed when the start-up check is over

	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	timeout time.Duration
}

// watchEntry is one watched channel's waiters; ready is closed (settled) once
// the SUBSCRIBE sent for it was confirmed or failed (err).
type watchEntry struct {
	waiters       map[chan struct{}]bool
	ready         chan struct{}
	sent, settled bool
	err           error
}

func (w *watcher) init(s *Store) {
	w.s, w.timeout = s, s.cfg.watchTimeout
	w.entries, w.dirty, w.sent, w.checked = map[string]*watchEntry{}, map[string]bool{}, map[string]bool{}, make(chan struct{})
	w.ctx, w.cancel = context.WithCancel(context.Background())
}

// spawn runs fn on a goroutine that Close waits for, unless closed; mu is held.
func (w *watcher) spawn(fn func(ctx context.Context)) bool {
	if w.closed {
		return false
	}
	w.running.Go(func() { fn(w.ctx) })
	return true
}

// leave removes a waiter; the last one of a channel unsubscribes it.
func (w *watcher) leave(ch string, e *watchEntry, wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(e.waiters, wake)
	if len(e.waiters) == 0 && w.entries[ch] == e {
		delete(w.entries, ch)
		w.dirty[ch] = true
		w.spawn(w.flush)
	}
}

// flush subscribes the dirty channels whose entry is unsettled (it needs its
// own confirmation) or not subscribed on ps, and unsubscribes the others.
func (w *watcher) flush(ctx context.Context) {
	w.flushing.Lock()
	defer w.flushing.Unlock()
	var sub, unsub []string
	w.mu.Lock()
	for ch := range w.dirty {
		switch e := w.entries[ch]; {
		case e != nil && (!e.settled || !w.sent[ch]):
			e.sent, w.sent[ch] = !e.settled, true
			sub = append(sub, ch)
		case e == nil && w.sent[ch]:
			delete(w.sent, ch)
			unsub = append(unsub, ch)
		}
	}
	clear(w.dirty)
	ps := w.ps
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	if len(sub) > 0 {
		if err := ps.Subscribe(ctx, sub...); err != nil {
			w.settle(sub, err)
		}
	}
	if len(unsub) > 0 {
		_ = ps.Unsubscribe(ctx, unsub...) // a stray subscription only drops its messages
	}
}

// settle ends the waits for chs's SUBSCRIBE, with err (nil: confirmed).
func (w *watcher) settle(chs []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range chs {
		if e := w.entries[ch]; e != nil && e.sent && !e.settled {
			e.err, e.settled = err, true
			close(e.ready)
		}
	}
}

// The receiver pings after healthInterval of silence, and replaces a lost
// connection after a pause doubling up to maxBackoff.
const healthInterval, minBackoff, maxBackoff = 30 * time.Second, 50 * time.Millisecond, 2 * time.Second

// receive reads the connection until Close.
func (w *watcher) receive(ctx context.Context) {
	backoff, heard := minBackoff, time.Now()
	for ctx.Err() == nil {
		w.mu.Lock()
		ps := w.ps
		w.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, w.timeout)
		ch, subscribed, ok, err := ps.Receive(rctx, w.timeout)
		cancel()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			w.reconnect(ps)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
		case !ok && time.Since(heard) >= healthInterval:
			heard = time.Now()
			pctx, cancel := context.WithTimeout(ctx, w.timeout)
			_ = ps.Ping(pctx)
			cancel()
		case !ok:
		case subscribed:
			heard, backoff = time.Now(), minBackoff
			w.settle([]string{ch}, nil)
		default:
			heard, backoff = time.Now(), minBackoff
			w.mu.Lock()
			w.wake(ch)
			w.mu.Unlock()
		}
	}
}

// reconnect replaces the lost connection old, subscribes every channel again
// and wakes every waiter: a release may have been missed.
func (w *watcher) reconnect(old PubSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.ps != old {
		return
	}
	w.ps = w.s.conn.PubSub()
	w.spawn(func(context.Context) { _ = old.Close() })
	clear(w.sent)
	for ch := range w.entries {
		w.dirty[ch] = true
		w.wake(ch)
	}
	w.spawn(w.flush)
}

// wake signals ch's waiters that have no signal pending; mu is held.
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

// close cancels the background calls, closes the connection in the
// background (a hung server may hold it), and waits at most twice the timeout.
func (w *watcher) close() error {
	w.mu.Lock()
	if ps := w.ps; ps != nil {
		w.spawn(func(context.Context) { _ = ps.Close() })
	}
	w.closed = true
	w.cancel()
	w.mu.Unlock()
	stopped := make(chan struct{})
	go func() { w.running.Wait(); close(stopped) }()
	select {
	case <-stopped:
		return nil
	case <-time.After(2 * w.timeout):
		return fmt.Errorf("%s: close: Redis did not answer within %v; the store's background goroutines "+
			"end when the client's timeouts expire", w.s.name, 2*w.timeout)
	}
}
