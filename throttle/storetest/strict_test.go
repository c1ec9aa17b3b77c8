package storetest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// strictEnv names the variable that makes TestIgnoresStrict run its
// store, in TestSuiteCatchesIgnoredStrict's child process.
const strictEnv = "STORETEST_IGNORES_STRICT"

// ignoresStrict is a memstore that decides strict rates as smooth ones, as
// a store written before store.Rate.Strict would.
type ignoresStrict struct{ *memstore.Store }

func (s ignoresStrict) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	r.Strict = false
	return s.Store.AllowN(ctx, key, r, cost)
}

func (s ignoresStrict) AllowAll(ctx context.Context, limits []store.Limit, cost int) ([]store.Decision, error) {
	limits = slices.Clone(limits)
	for i := range limits {
		limits[i].Rate.Strict = false
	}
	return s.Store.AllowAll(ctx, limits, cost)
}

// refusesStrict is a memstore that refuses strict rates, as store.Quota
// lets a store do.
type refusesStrict struct{ *memstore.Store }

func (s refusesStrict) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if r.Strict {
		return store.Decision{}, fmt.Errorf("%w: no strict rates", store.ErrInvalid)
	}
	return s.Store.AllowN(ctx, key, r, cost)
}

func (s refusesStrict) AllowAll(ctx context.Context, limits []store.Limit, cost int) ([]store.Decision, error) {
	for _, l := range limits {
		if l.Rate.Strict {
			return nil, fmt.Errorf("%w: no strict rates", store.ErrInvalid)
		}
	}
	return s.Store.AllowAll(ctx, limits, cost)
}

// TestRefusesStrict: the suite skips the strict checks of a store that
// refuses strict rates, and passes it.
func TestRefusesStrict(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return refusesStrict{memstore.New()} })
}

// TestIgnoresStrict runs the suite against ignoresStrict, in the child
// process of TestSuiteCatchesIgnoredStrict only.
func TestIgnoresStrict(t *testing.T) {
	if os.Getenv(strictEnv) == "" {
		t.Skip("runs in TestSuiteCatchesIgnoredStrict's child process")
	}
	storetest.Run(t, func(t *testing.T) store.Store { return ignoresStrict{memstore.New()} })
}

// TestSuiteCatchesIgnoredStrict: a store that ignores Rate.Strict fails the
// strict checks of one rate and of a stack (the race, which a smooth rate
// of the same burst also passes, checks atomicity only).
func TestSuiteCatchesIgnoredStrict(t *testing.T) {
	if os.Getenv(strictEnv) != "" {
		t.Skip("in the child process")
	}
	if testing.Short() {
		t.Skip("runs the test binary once more")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIgnoresStrict$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), strictEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the suite passed a store that ignores strict rates:\n%s", out)
	for _, sub := range []string{"strict", "strict-allow-all"} {
		require.Contains(t, string(out), "--- FAIL: TestIgnoresStrict/"+sub+" ", "check %s", sub)
	}
}
