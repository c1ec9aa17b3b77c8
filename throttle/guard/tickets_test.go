package guard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// observed is an Observer that counts events.
type observed struct{ n int }

func (o *observed) Observe(context.Context, throttle.Event) { o.n++ }

// TestLockTickets checks that an admitted Dedupe or Cooldown request on an
// in-memory store holds its key without a lease (Lock.Hold), one with an
// Observer holds a lease, and that both answer, release and count alike:
// every step's outcome and the Lock's Stats are compared.
func TestLockTickets(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown} {
		run := func(obs throttle.Observer) (steps []string, stats throttle.Stats) {
			l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", Mode: mode,
				Options: throttle.Options{Observer: obs}})
			require.NoError(t, err)
			g := Lock(l)
			begin := func(id string) ticket {
				_, tk, rej := g.begin1(ctx, id)
				if rej != nil {
					steps = append(steps, fmt.Sprintf("%s rejected %d", id, rej.Status))
					return tk
				}
				if obs == nil {
					require.True(t, tk.lease == nil && (tk.hold != throttle.Hold{}), "%v: admitted with lease %v, hold %v: want a hold without a lease", mode, tk.lease, (tk.hold != throttle.Hold{}))
				} else {
					require.NotNil(t, tk.lease, "%v with an Observer: admitted without a lease", mode)
				}
				h := http.Header{}
				tk.setHeaders(h)
				steps = append(steps, fmt.Sprintf("%s admitted %v", id, h))
				return tk
			}
			tk := begin("a")
			begin("a")
			tk.finish(ctx, http.StatusInternalServerError, false) // Dedupe frees a, Cooldown keeps it
			tk = begin("a")
			tk.finish(ctx, http.StatusOK, false)
			begin("a")
			tk = begin("b")
			tk.finish(ctx, 0, true) // a panic
			begin("b")
			return steps, l.Stats()
		}
		plain, plainStats := run(nil)
		obs := &observed{}
		seen, seenStats := run(obs)
		assert.Equal(t, plain, seen, "%v: steps without and with an Observer", mode)
		assert.Equal(t, plainStats, seenStats, "%v: stats without and with an Observer", mode)
		assert.NotZero(t, obs.n, "%v: the Observer was told nothing", mode)
		assert.NotZero(t, plainStats.Acquired, "%v: the script admits", mode)
		assert.NotZero(t, plainStats.Rejected, "%v: the script rejects", mode)
	}
}

// TestStoreFull checks a lock's answer to a full memstore (issue 36): load,
// not an outage, so 503 with Retry-After, as a shed request, whatever
// WhenStoreFails says, and no ticket; counted as Full, not as a store error.
func TestStoreFull(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []throttle.FailMode{throttle.FailOpen, throttle.FailClosed} {
		t.Run(fmt.Sprint(fail), func(t *testing.T) {
			l, err := throttle.NewLock(memstore.New(memstore.WithMaxKeys(1)), throttle.LockConfig{Name: "submit",
				Options: throttle.Options{WhenStoreFails: fail, Logger: slog.New(slog.DiscardHandler)}})
			require.NoError(t, err)
			g := Lock(l)
			_, tk, rej := g.begin1(ctx, "a")
			require.Nil(t, rej, "first key turned away")
			require.True(t, (tk.hold != throttle.Hold{}), "first key admitted without a hold")
			_, _, rej = g.begin1(ctx, "b")
			require.NotNil(t, rej, "full store: admitted")
			require.Equal(t, http.StatusServiceUnavailable, rej.Status, "full store")
			require.Equal(t, ReasonStoreUnavailable, rej.Reason, "full store")
			require.Equal(t, int64(1), rej.retryAfter(), "full store: Retry-After")
			st := l.Stats()
			require.Equal(t, uint64(1), st.Full, "%+v", st)
			require.Zero(t, st.StoreErrors+st.FailedOpen, "%+v", st)
		})
	}
}
