// Package obskit is what the observer packages (promthrottle,
// otelthrottle) share and users never call: the overload limiters whose
// state they read at each collection.
package obskit

import (
	"slices"
	"strings"
	"sync"

	"github.com/go-throttle/throttle/throttle/overload"
)

// Overloads are the overload limiters an observer reads at each
// collection; safe for concurrent use.
type Overloads struct {
	mu   sync.Mutex
	list []*overload.Limiter
}

// Add adds each limiter of lims unless it is nil or added already.
func (o *Overloads) Add(lims ...*overload.Limiter) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range lims {
		if l != nil && !slices.Contains(o.list, l) {
			o.list = append(o.list, l)
		}
	}
}

// Named is the snapshot of the limiters of one name.
type Named struct {
	Name string
	overload.Stats
}

// Stats returns a snapshot of the limiters added, one per name in name
// order: limiters that share a name are summed (BaseLatency is the
// largest), as their events are counted together under one policy label,
// so that a collection never holds two series of one name and labels.
func (o *Overloads) Stats() []Named {
	o.mu.Lock()
	list := o.list
	o.mu.Unlock()
	out := make([]Named, 0, len(list))
	for _, l := range list {
		s := l.Stats()
		i, found := slices.BinarySearchFunc(out, l.Name(), func(n Named, name string) int { return strings.Compare(n.Name, name) })
		if !found {
			out = slices.Insert(out, i, Named{Name: l.Name(), Stats: s})
			continue
		}
		sum := &out[i].Stats
		sum.Limit += s.Limit
		sum.InFlight += s.InFlight
		sum.Queued += s.Queued
		sum.QueueDelay = max(sum.QueueDelay, s.QueueDelay)
		sum.BaseLatency = max(sum.BaseLatency, s.BaseLatency)
		sum.Admitted += s.Admitted
		sum.ShedLimit += s.ShedLimit
		sum.ShedQueueTimeout += s.ShedQueueTimeout
		sum.ShedQueueFull += s.ShedQueueFull
		sum.Canceled += s.Canceled
	}
	return out
}

// Shed is one count of shed requests of a snapshot, by reason.
type Shed struct {
	Reason overload.Reason
	N      uint64
}

// Shed returns n's shed requests by reason, every reason of package
// overload listed, zero ones too: a rate of them is then defined from the
// first collection on.
func (n *Named) Shed() [3]Shed {
	return [3]Shed{
		{overload.ReasonLimit, n.ShedLimit},
		{overload.ReasonQueueTimeout, n.ShedQueueTimeout},
		{overload.ReasonQueueFull, n.ShedQueueFull},
	}
}
