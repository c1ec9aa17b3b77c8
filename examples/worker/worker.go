package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// timeLayout is RFC 3339 with a fixed nine-digit fraction (time.RFC3339Nano
// drops trailing zeros), so that lines sort by time as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// events writes one line per event; a line is written with one Write under a
// mutex, so the lines of concurrent syncs never interleave.
type events struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *events) emit(worker, customer, event string, fence int64) {
	line := fmt.Sprintf("%s worker=%s customer=%s event=%s fence=%d\n",
		time.Now().UTC().Format(timeLayout), worker, customer, event, fence)
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = io.WriteString(e.w, line)
}

// worker syncs the customers whose locks it can take.
type worker struct {
	id     string
	lock   *throttle.Lock
	work   time.Duration
	log    *events
	logger *slog.Logger
}

// round walks customers once: it tries each customer's lock, starts a sync
// for each one it gets and moves on as soon as the lock is decided, then
// waits for its syncs. It returns the first store failure, after every
// sync has finished.
func (w *worker) round(ctx context.Context, customers []string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(customers))
	for i, c := range customers {
		if ctx.Err() != nil {
			break
		}
		decided := make(chan struct{})
		wg.Go(func() { errs[i] = w.sync(ctx, c, decided) })
		<-decided
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sync takes customer's lock once and, if it gets it, syncs for w.work with
// the lease refreshed by Do. decided is closed once the lock is taken or
// refused, so that the walk can go on.
func (w *worker) sync(ctx context.Context, customer string, decided chan<- struct{}) error {
	decide := sync.OnceFunc(func() { close(decided) })
	defer decide()
	var fence int64
	started := false
	err := w.lock.Do(ctx, customer, func(work context.Context) error {
		fence = throttle.LeaseFrom(work).Fence()
		started = true
		w.log.emit(w.id, customer, "start", fence)
		decide()
		t := time.NewTimer(w.work)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-work.Done():
			return context.Cause(work)
		}
	})
	switch {
	case err == nil:
		w.log.emit(w.id, customer, "done", fence)
	case errors.Is(err, throttle.ErrContended):
		w.log.emit(w.id, customer, "skipped", 0)
	case errors.Is(err, throttle.ErrLost):
		w.log.emit(w.id, customer, "lost", fence)
	case ctx.Err() != nil:
		// Interrupted: the sync was cancelled and its key released (or it
		// never started). Neither done nor lost; run reports it.
	case started && errors.Is(err, throttle.ErrStore):
		// The sync finished but its release failed: the key expires by
		// itself within one lease.
		w.log.emit(w.id, customer, "done", fence)
		w.logger.Warn("release failed; the lock expires within its lease", "customer", customer, "err", err)
	default:
		return fmt.Errorf("customer %s: %w", customer, err)
	}
	return nil
}
