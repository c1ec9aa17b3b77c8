//go:build !race

package throttle_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestAllocs pins the allocations of an admission (the race detector
// changes allocation counts, hence the build tag). On a memory store: the
// key and token (one string) and the lease when admitted; the key and
// token and the ContendedError when the key is held. On a remote store (the
// fake of BenchmarkLimiterOverhead) the watch of the call (see watch) adds
// nothing for a caller on context.Background, whose calls share one
// storeCall; for a caller whose context can be cancelled it adds the call
// and, for a store that waits on Done (the fake does, as go-redis does),
// the call's Done channel.
//
// The measured functions check their results without testify: its
// t.Helper call and variadic arguments would allocate.
func TestAllocs(t *testing.T) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := make([]string, 4000)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	for _, c := range []struct {
		name               string
		st                 store.Store
		ctx                context.Context
		admitted, rejected float64
	}{
		{"memstore", memstore.New(), cancellable, 2, 2},
		{"remote", remote{}, cancellable, 4, 4},
		{"remote-background", remote{}, context.Background(), 2, 2},
	} {
		ctx := c.ctx
		t.Run(c.name, func(t *testing.T) {
			config := throttle.LockConfig{Name: "allocs", Options: throttle.Options{Timeout: time.Second}}
			l := newLock(t, c.st, config)
			i := 0
			var failed error
			admit := func() {
				if _, err := l.Admit(ctx, ids[i]); err != nil && failed == nil {
					failed = err
				}
				i++
			}
			for i < 2000 { // the store's maps grow now, not while measured
				admit()
			}
			n := testing.AllocsPerRun(1000, admit)
			require.NoError(t, failed, "admission")
			assert.LessOrEqual(t, n, c.admitted, "allocations per admission")
			t.Logf("%v allocations per admission", n)

			if c.st == (remote{}) {
				l = newLock(t, remote{held: true}, config)
			}
			n = testing.AllocsPerRun(1000, func() {
				if _, err := l.Admit(ctx, ids[0]); !errors.Is(err, throttle.ErrContended) && failed == nil {
					failed = err
				}
			})
			require.NoError(t, failed, "admission of a held key: want ErrContended")
			assert.LessOrEqual(t, n, c.rejected, "allocations per rejection")
			t.Logf("%v allocations per rejection", n)
		})
	}
}

// TestQuotaAdmitInlined pins what keeps an admitted quota request at one
// allocation on a memory store (the key): Quota.Admit is small enough to
// be inlined, so that a caller that only reads the decision keeps it on
// its own stack. A change that makes Admit too costly to inline moves the
// decision to the heap, and this test sees the second allocation.
func TestQuotaAdmitInlined(t *testing.T) {
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "allocs"})
	rate := throttle.Rate{Limit: 1 << 20, Window: time.Hour}
	ctx := context.Background()
	_, _ = q.Admit(ctx, "u", rate, 1) // the key's entry is made now, not while measured
	var failed error
	n := testing.AllocsPerRun(1000, func() {
		d, err := q.Admit(ctx, "u", rate, 1)
		// Not d itself: passed on, it would escape here.
		if allowed := d != nil && d.Allowed; (err != nil || !allowed) && failed == nil {
			failed = errors.Join(errors.New("Admit: not allowed"), err)
		}
	})
	require.NoError(t, failed)
	assert.LessOrEqual(t, n, 1.0, "allocations per admitted quota request, want at most 1 (the key)")
}
