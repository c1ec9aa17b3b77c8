//go:build !race

package throttle_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestAllocs pins the allocations of an admission (the race detector
// changes allocation counts, hence the build tag). On a memory store: the
// key and token (one string) and the lease when admitted; the key and
// token and the ContendedError when the key is held. On a remote store (the
// fake of BenchmarkLimiterOverhead) the watch of the call (see watch) adds
// the call, its context.WithCancelCause (context and cancel function), its
// timer and the timer's function, and the Done channel, which a store that
// waits on it (go-redis does) makes.
func TestAllocs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := make([]string, 4000)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	for _, c := range []struct {
		name               string
		st                 store.Store
		admitted, rejected float64
	}{
		{"memstore", memstore.New(), 2, 2},
		{"remote", remote{}, 8, 8},
	} {
		l, err := throttle.New(c.st, throttle.Policy{Name: "allocs", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		admit := func() {
			if _, err := l.Admit(ctx, ids[i]); err != nil {
				t.Fatalf("%s: admission of %s: %v", c.name, ids[i], err)
			}
			i++
		}
		for i < 2000 { // the store's maps grow now, not while measured
			admit()
		}
		if n := testing.AllocsPerRun(1000, admit); n > c.admitted {
			t.Errorf("%s: %v allocations per admission, want at most %v", c.name, n, c.admitted)
		}
		if c.name == "remote" {
			l, _ = throttle.New(remote{held: true}, throttle.Policy{Name: "allocs", Timeout: time.Second})
		}
		n := testing.AllocsPerRun(1000, func() {
			if _, err := l.Admit(ctx, ids[0]); !errors.Is(err, throttle.ErrContended) {
				t.Fatalf("%s: admission of a held key: %v", c.name, err)
			}
		})
		if n > c.rejected {
			t.Errorf("%s: %v allocations per rejection, want at most %v", c.name, n, c.rejected)
		}
	}
}

// TestAdmitNInlined pins what keeps an admitted quota request at one
// allocation on a memory store (the key): Limiter.AdmitN is small enough
// to be inlined, so that a caller that only reads the decision keeps it on
// its own stack. A change that makes AdmitN too costly to inline moves the
// decision to the heap, and this test sees the second allocation.
func TestAdmitNInlined(t *testing.T) {
	l, err := throttle.New(memstore.New(), throttle.Policy{Name: "allocs", Mode: throttle.Quota, Limit: 1 << 20, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = l.AdmitN(ctx, "u", 1) // the key's entry is made now, not while measured
	n := testing.AllocsPerRun(1000, func() {
		d, err := l.AdmitN(ctx, "u", 1)
		if allowed := d != nil && d.Allowed; err != nil || !allowed {
			// Not d itself: passed on, it would escape here.
			t.Fatalf("AdmitN: allowed %v, %v", allowed, err)
		}
	})
	if n > 1 {
		t.Errorf("%v allocations per admitted quota request, want at most 1 (the key)", n)
	}
}
