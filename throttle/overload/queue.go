package overload

// waiter is a request waiting in the queue for a permit.
type waiter struct {
	older, newer *waiter
	since        int64 // when it began to wait
	deadline     int64 // when it is shed if it still waits
	start        int64 // when it was granted its permit
	with         int32 // requests in flight then, itself included
	state        waitState
	ready        chan struct{} // closed once state is granted or late
}

// waitState is where a waiter stands.
type waitState uint8

const (
	waiting waitState = iota
	granted           // it holds a permit
	late              // its deadline passed before a permit was free
)

// queue holds the waiters, oldest first, in a doubly linked list: a
// waiter leaves from either end (FIFO or LIFO) or from the middle (its
// context ended, its deadline passed) at no cost.
type queue struct {
	oldest, newest *waiter
	n              int
	// emptyAt is the last time the queue was empty: a queue that has not
	// been empty for an interval is standing, CoDel's sign of overload
	// rather than of a burst.
	emptyAt int64
}

// push adds w as the newest waiter.
func (q *queue) push(w *waiter, now int64) {
	if q.n == 0 {
		q.emptyAt = now
	}
	w.older = q.newest
	if q.newest != nil {
		q.newest.newer = w
	} else {
		q.oldest = w
	}
	q.newest = w
	q.n++
}

// remove takes w out of the queue.
func (q *queue) remove(w *waiter, now int64) {
	if w.older != nil {
		w.older.newer = w.newer
	} else {
		q.oldest = w.newer
	}
	if w.newer != nil {
		w.newer.older = w.older
	} else {
		q.newest = w.older
	}
	w.older, w.newer = nil, nil
	q.n--
	if q.n == 0 {
		q.emptyAt = now
	}
}

// standing reports whether the queue has not been empty for interval.
func (q *queue) standing(now, interval int64) bool {
	return q.n > 0 && now-q.emptyAt >= interval
}
