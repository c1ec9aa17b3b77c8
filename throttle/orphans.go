package throttle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// maxOrphans bounds the keys waiting for a background release in a long
// outage; the others expire by themselves.
const maxOrphans = 4096

// orphans are keys an acquisition may have taken although its caller never
// learnt it (no reply in time, a broken connection, a grant too late to
// use). The caller made the token, so a token-checked release frees such a
// key once the store answers, rather than leave it held by nobody.
type orphans struct {
	mu      sync.Mutex
	queue   []orphan
	running bool
}

type orphan struct {
	st         store.Store
	key, token string
	until      time.Time // the key expires by itself by then
	goneSince  time.Time // when a release first found no key
}

// orphanSettle is how long a release keeps trying after it found no key:
// the command it cleans up after may still be on its way (a hung server
// that wakes up runs what was sent meanwhile).
const orphanSettle = time.Second

// releaseLater queues req's key for a background release after a call that
// failed with cause, unless the store changed nothing (store.ErrNotApplied)
// or the request may be a re-entry, whose release could drop an outer hold.
func (l *limiter) releaseLater(ctx context.Context, st store.Store, req store.Request, sent int64, cause error) {
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

// releaseOrphans releases the queued keys, retrying with a growing pause
// those releaseOrphan says to.
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

// releaseOrphan tries to release or once, and reports whether to try again:
// until it expires, while the store does not answer or, for orphanSettle,
// finds no key.
func (l *limiter) releaseOrphan(or *orphan) (again bool) {
	if time.Now().After(or.until) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.p.Timeout)
	out, err := or.st.Release(ctx, or.key, or.token)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotApplied):
		return false // refused: nobody to ask, and the key expires by itself
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
