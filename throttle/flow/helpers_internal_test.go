package flow

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// newLock returns a Lock configured by c on a fresh memory store.
func newLock(t testing.TB, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(memstore.New(), c)
	require.NoError(t, err)
	return l
}

// begin decides a call of id with the background context.
func begin(j *Job, id string) (Permit, Refusal, bool) {
	return j.Begin(context.Background(), Call{ID: id})
}

// mustBegin begins a call of id and fails the test unless it goes ahead.
func mustBegin(t testing.TB, j *Job, id string) Permit {
	t.Helper()
	p, ref, ok := begin(j, id)
	require.True(t, ok, "%q refused: %+v", id, ref)
	return p
}

// isHeld reports whether a call of id is now refused as contended. A probe
// that goes ahead ends as failed.
func isHeld(t testing.TB, j *Job, id string) bool {
	t.Helper()
	p, ref, ok := begin(j, id)
	if ok {
		p.End(Outcome{Failed: true})
		return false
	}
	require.Equal(t, ReasonContended, ref.Reason, "probe refused for %v, want contended", ref.Reason)
	return true
}

// fieldsOf returns what lim's fields say, "" for a field not sent.
func fieldsOf(lim *Limits) (policy, limit string) {
	p, l := lim.Fields()
	if p != nil {
		policy = p[0]
	}
	if l != nil {
		limit = l[0]
	}
	return policy, limit
}

// brokenStore fails every call with an error naming internals. Like a real
// store's refused connection, the error says the call changed nothing
// (store.ErrNotApplied), so the Lock has no orphan to clean up.
type brokenStore struct{ releases atomic.Int32 }

var errBroken = fmt.Errorf("dial tcp 10.0.0.9:6379: connection refused: %w", store.ErrNotApplied)

func (*brokenStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, errBroken
}

func (s *brokenStore) Release(context.Context, string, string) (store.Outcome, error) {
	s.releases.Add(1)
	return 0, errBroken
}

func (*brokenStore) Extend(context.Context, string, string, time.Duration) (store.Outcome, error) {
	return 0, errBroken
}

func (*brokenStore) Delete(context.Context, ...string) error { return errBroken }

// quiet keeps the limiter's store-error warnings out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// observed is an Observer that counts events.
type observed struct{ n atomic.Int32 }

func (o *observed) Observe(context.Context, throttle.Event) { o.n.Add(1) }
