package adaptertest

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// quiet keeps the dry run's log lines out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// kindCounter is an Observer that counts events by kind.
type kindCounter struct {
	mu sync.Mutex
	n  map[throttle.EventKind]int
}

func (k *kindCounter) Observe(_ context.Context, e throttle.Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[throttle.EventKind]int{}
	}
	k.n[e.Kind]++
}

func (k *kindCounter) count(kind throttle.EventKind) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[kind]
}

// testDryRun checks Policy.DryRun through the adapter: a duplicate, a
// request over its quota and a request without a key all go ahead; the
// would-be rejections carry their RateLimit fields (no Retry-After) and are
// observed as DryRunRejected, the missing key as KeyError.
func testDryRun(t *testing.T, a Adapter) {
	for _, p := range []throttle.Policy{
		{Name: "submit", DryRun: true, Logger: quiet},
		{Name: "search", Mode: throttle.Quota, Limit: 1, Window: time.Minute, DryRun: true, Logger: quiet},
	} {
		t.Run(p.Mode.String(), func(t *testing.T) {
			obs := &kindCounter{}
			p.Observer = obs
			l := NewLimiter(t, p)
			c := &counter{}
			h := a.Wrap(l, UserKey(), c)
			Status(t, Serve(h, Submit("u1")), http.StatusCreated)
			rec := Serve(h, Submit("u1"))
			Status(t, rec, http.StatusCreated)
			if v := rec.Header().Get("Retry-After"); v != "" {
				t.Fatalf("Retry-After %q on a request let through", v)
			}
			f := LimitOf(t, rec.Header(), p.Name)
			if f.R != 0 || !f.HasT || f.T < 1 || f.T > 60 {
				t.Fatalf("RateLimit %+v, want r=0 and the time the rejection would have given", f)
			}
			Status(t, Serve(h, Submit("")), http.StatusCreated) // no key
			if n := c.calls.Load(); n != 3 {
				t.Fatalf("handler ran %d times, want 3: a dry run turns nothing away", n)
			}
			if d, k := obs.count(throttle.DryRunRejected), obs.count(throttle.KeyError); d != 1 || k != 1 {
				t.Fatalf("%d dry-run rejections and %d key errors observed, want 1 and 1", d, k)
			}
			if n := obs.count(throttle.Rejected); n != 0 {
				t.Fatalf("%d rejections observed in a dry run", n)
			}
		})
	}
}
