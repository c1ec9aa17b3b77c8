package throttle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// maxOrphans bounds the keys waiting for a background release. Beyond it
// the newest are not queued: they expire by themselves after their TTL, and
// the process's memory stays bounded during a long outage.
const maxOrphans = 4096

// orphans are keys that an acquisition may have taken although its caller
// never learnt it: the store failed to answer in time or the connection
// broke after the command was sent, or the grant came too late to use. The
// caller generated the token, so a token-checked release frees such a key
// as soon as the store answers, instead of leaving it held by nobody for a
// whole TTL. One goroutine per limiter works through them while there are
// any, and exits when there are none.
type orphans struct {
	mu      sync.Mutex
	queue   []orphan
	running bool
}

type orphan struct {
	st         Store
	key, token string
	until      time.Time // the key expires by itself by then
	goneSince  time.Time // when a release first found no key
}

// orphanSettle is how long a release keeps trying after it found no key at
// all. The command it cleans up after may still be on its way: a hung
// server that wakes up runs what was sent to it meanwhile, and another
// connection's release can overtake it.
const orphanSettle = time.Second

// releaseLater queues req's key for a background release after a call that
// failed with cause, unless the key cannot be an orphan of this request:
// the store says the call changed nothing (store.ErrNotApplied), or a reentrant
// request made with an owner from the context may be a re-entry, and
// releasing it could drop the hold of an outer acquisition that is still
// running (the key then expires by itself instead).
func (l *limiter) releaseLater(ctx context.Context, st Store, req store.Request, sent int64, cause error) {
	if errors.Is(cause, store.ErrNotApplied) || (req.Reentrant && ownerFrom(ctx) == req.Token) {
		return
	}
	o := &l.orphans
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) >= maxOrphans {
		return
	}
	o.queue = append(o.queue, orphan{st: st, key: req.Key, token: req.Token, until: monoTime(sent).Add(req.TTL)})
	if !o.running {
		o.running = true
		go l.releaseOrphans()
	}
}

// releaseOrphans releases the queued keys, each with a token-checked Release
// bounded by Options.Timeout, retrying with a growing pause those the store
// does not answer, or finds missing for less than orphanSettle, until the
// key has expired by itself. A store that refuses the call outright
// (store.ErrNotApplied) ends the attempt.
func (l *limiter) releaseOrphans() {
	o := &l.orphans
	pause := 10 * time.Millisecond
	for {
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		if len(batch) == 0 {
			o.running = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		var retry []orphan
		for _, or := range batch {
			if l.releaseOrphan(&or) {
				retry = append(retry, or)
			}
		}
		if len(retry) == 0 {
			pause = 10 * time.Millisecond
			continue
		}
		o.mu.Lock()
		o.queue = append(retry, o.queue...)
		o.mu.Unlock()
		time.Sleep(pause)
		pause = min(2*pause, time.Second)
	}
}

// releaseOrphan tries to release or once, and reports whether to try again.
func (l *limiter) releaseOrphan(or *orphan) (again bool) {
	if time.Now().After(or.until) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.p.Timeout)
	out, err := or.st.Release(ctx, or.key, or.token)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotApplied):
		// The server refuses connections: nobody is there to ask, and
		// one that restarts empty has lost the key. Otherwise it expires
		// by itself.
		return false
	case err != nil:
		return true
	case out == store.Gone:
		now := time.Now()
		if or.goneSince.IsZero() {
			or.goneSince = now
		}
		return now.Sub(or.goneSince) < orphanSettle
	}
	return false
}
