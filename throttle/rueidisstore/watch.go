package rueidisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// errClosed is returned by Watch after Close.
var errClosed = errors.New("rueidisstore: store closed")

// watcher serves Watch with one subscription per watched key, however many
// waiters it has: a thousand waiters on a hundred keys cost a hundred
// channel subscriptions, carried by rueidis on its shared connection.
//
// Each subscription is one goroutine in rueidis's Receive. When its last
// waiter leaves, the goroutine's context is cancelled and it sends
// UNSUBSCRIBE on the connection that subscribed (rueidis's receive-return
// hook); without it the server would keep the subscription for the life of
// the connection. A new subscription to a channel that is being
// unsubscribed can be ended by that UNSUBSCRIBE: its goroutine then
// subscribes again and wakes its waiters, who look at the key once more.
type watcher struct {
	s       *Store
	timeout time.Duration

	mu      sync.Mutex
	entries map[string]*watchEntry
	closed  bool
	wg      sync.WaitGroup
}

// watchEntry is one subscribed channel and its waiters.
type watchEntry struct {
	waiters map[chan struct{}]struct{}
	cancel  context.CancelFunc
	ready   chan struct{} // closed once subscribed, or when err is set
	settled bool          // ready is closed; mu
	err     error
}

func (w *watcher) init(s *Store, timeout time.Duration) {
	w.s, w.timeout = s, timeout
	w.entries = make(map[string]*watchEntry)
}

// Watch returns a channel that receives a value when key is released or
// recorded (the scripts publish on its channel), once Redis has confirmed
// the subscription, so that a release after Watch returns is never missed.
// Call stop when the wait is over. Watch fails when Redis does not confirm
// within the watch timeout or ctx ends first; the Limiter then polls.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	return s.watch.add(ctx, channel(key))
}

func (w *watcher) add(ctx context.Context, ch string) (<-chan struct{}, func(), error) {
	wake := make(chan struct{}, 1)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, nil, errClosed
	}
	e := w.entries[ch]
	if e == nil {
		e = w.start(ch)
	}
	e.waiters[wake] = struct{}{}
	w.mu.Unlock()

	var once sync.Once
	stop := func() { once.Do(func() { w.remove(ch, e, wake) }) }
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	select {
	case <-e.ready:
	case <-timer.C:
		stop()
		return nil, nil, fmt.Errorf("rueidisstore: watch: no subscription confirmed within %v", w.timeout)
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	w.mu.Lock()
	err := e.err
	w.mu.Unlock()
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("rueidisstore: watch: %w", err)
	}
	return wake, stop, nil
}

// start makes the entry of channel ch and its goroutine; mu is held.
func (w *watcher) start(ch string) *watchEntry {
	ctx, cancel := context.WithCancel(context.Background())
	e := &watchEntry{waiters: make(map[chan struct{}]struct{}), cancel: cancel, ready: make(chan struct{})}
	w.entries[ch] = e
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.receive(ctx, ch, e)
	}()
	return e
}

// receive subscribes to ch and fans its messages out to e's waiters until
// e's context is cancelled.
func (w *watcher) receive(ctx context.Context, ch string, e *watchEntry) {
	client := w.s.client
	// On the way out of each Receive, unsubscribe on the connection that
	// subscribed, bounded by the watch timeout.
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, c rueidis.CommandClient) error {
		uctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		defer cancel()
		_ = c.Do(uctx, c.B().Unsubscribe().Channel(ch).Build()).Error()
		return err
	})
	ctx = rueidis.WithOnSubscriptionHook(ctx, func(sub rueidis.PubSubSubscription) {
		if sub.Kind == "subscribe" && sub.Channel == ch {
			w.settle(e, nil)
		}
	})
	for {
		err := client.Receive(ctx, client.B().Subscribe().Channel(ch).Build(), func(rueidis.PubSubMessage) {
			w.wakeAll(e)
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil && !w.settled(e) {
			w.settle(e, err)
			return
		}
		// Unsubscribed under us (see watcher) or the connection was
		// replaced: the waiters look at the key again, and the channel
		// is subscribed again after a pause that keeps a failing server
		// from being asked in a tight loop.
		w.wakeAll(e)
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settle closes e.ready once, recording err.
func (w *watcher) settle(e *watchEntry, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !e.settled {
		e.settled, e.err = true, err
		close(e.ready)
	}
}

func (w *watcher) settled(e *watchEntry) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return e.settled
}

// wakeAll tells every waiter of e, without blocking (a waiter that has a
// wake-up pending needs no second one).
func (w *watcher) wakeAll(e *watchEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range e.waiters {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// remove takes a waiter off e; the last one ends the subscription.
func (w *watcher) remove(ch string, e *watchEntry, wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(e.waiters, wake)
	if len(e.waiters) == 0 {
		if w.entries[ch] == e {
			delete(w.entries, ch)
		}
		e.cancel()
	}
}

// close ends every subscription and waits for their goroutines.
func (w *watcher) close() error {
	w.mu.Lock()
	w.closed = true
	for ch, e := range w.entries {
		e.cancel()
		delete(w.entries, ch)
	}
	w.mu.Unlock()
	w.wg.Wait()
	return nil
}
