package overload_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/store"
)

var storeInvalid = store.ErrInvalid

// recorder is a throttle.Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []throttle.Event
}

func (r *recorder) Observe(_ context.Context, e throttle.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// TestObserver: an admission says how long it waited, a refusal why, and
// an ended permit how long it was held, under the limiter's name and
// ModeOverload.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := newLimiter(t, overload.Config{Name: "report", MinLimit: 1, MaxLimit: 1, Observer: rec})
		p, err := l.Acquire(context.Background(), overload.Normal)
		require.NoError(t, err)
		go func() {
			time.Sleep(30 * time.Millisecond)
			p.End()
		}()
		q, err := l.Acquire(context.Background(), overload.Normal)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), overload.ShedFirst)
		require.Error(t, err)
		q.Drop()

		want := []throttle.Event{
			{Kind: "admitted"},
			{Kind: "released", Hold: 30 * time.Millisecond, Reason: "done"},
			{Kind: "admitted", Latency: 30 * time.Millisecond},
			{Kind: "shed", Reason: "limit", RetryAfter: time.Second},
			{Kind: "released", Reason: "dropped"},
		}
		for i := range want {
			want[i].Policy, want[i].Mode = "report", throttle.ModeOverload
		}
		assert.ElementsMatch(t, want, rec.events)
		assert.Equal(t, "overload", throttle.ModeOverload.String())
	})
}
