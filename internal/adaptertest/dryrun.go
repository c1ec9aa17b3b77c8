package adaptertest

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// quiet keeps the dry run's log lines out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// kindCounter is an Observer that counts events by kind.
type kindCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (k *kindCounter) Observe(_ context.Context, e throttle.Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[string]int{}
	}
	k.n[e.Kind]++
}

func (k *kindCounter) count(kind string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[kind]
}

// testDryRun checks Options.DryRun through the adapter: a duplicate, a
// request over its quota and a request without a key all go ahead; the
// would-be rejections carry their RateLimit fields (no Retry-After) and are
// observed as "dry_run_rejected", the missing key as "key_error".
func testDryRun(t *testing.T, a Adapter) {
	for _, c := range []struct {
		name, policy string
		guard        func(t *testing.T, o throttle.Options) *guard.Guard
	}{
		{"dedupe", "submit", func(t *testing.T, o throttle.Options) *guard.Guard {
			return guard.Lock(NewLock(t, throttle.LockConfig{Name: "submit", Options: o}))
		}},
		{"quota", "search", func(t *testing.T, o throttle.Options) *guard.Guard {
			q := NewQuota(t, throttle.QuotaConfig{Name: "search", Options: o})
			return guard.Quota(q, throttle.Rate{Limit: 1, Window: time.Minute})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := &kindCounter{}
			g := c.guard(t, throttle.Options{DryRun: true, Logger: quiet, Observer: obs})
			cnt := &counter{}
			h := a.Wrap(g, UserKey(), cnt)
			Status(t, Serve(h, Submit("u1")), http.StatusCreated)
			rec := Serve(h, Submit("u1"))
			Status(t, rec, http.StatusCreated)
			noRetryAfter(t, rec.Header())
			f := LimitOf(t, rec.Header(), c.policy)
			require.Zero(t, f.R, "RateLimit r: nothing left")
			require.True(t, f.HasT, "RateLimit t: the time the rejection would have given")
			require.GreaterOrEqual(t, f.T, int64(1), "RateLimit t")
			require.LessOrEqual(t, f.T, int64(60), "RateLimit t")
			Status(t, Serve(h, Submit("")), http.StatusCreated) // no key
			require.Equal(t, int32(3), cnt.calls.Load(), "handler runs: a dry run turns nothing away")
			require.Equal(t, 1, obs.count("dry_run_rejected"), "dry-run rejections observed")
			require.Equal(t, 1, obs.count("key_error"), "key errors observed")
			require.Zero(t, obs.count("rejected"), "rejections observed in a dry run")
		})
	}
}
