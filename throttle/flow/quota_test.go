package flow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func newQuota(t testing.TB, c throttle.QuotaConfig) *throttle.Quota {
	t.Helper()
	q, err := throttle.NewQuota(memstore.New(), c)
	require.NoError(t, err)
	return q
}

// costOf is a WithCost function that reads the cost from the call's Request.
func costOf(c Call) (int, error) {
	if err, ok := c.Request.(error); ok {
		return 0, err
	}
	return c.Request.(int), nil
}

// TestCost: a Quota charges what WithCost says; a cost above the least
// Burst (413), a negative one (400) or an error of the function refuses
// the call with ReasonBadCost, charging nothing.
func TestCost(t *testing.T) {
	q := newQuota(t, throttle.QuotaConfig{Name: "batch"})
	rate := throttle.Rate{Limit: 10, Window: time.Hour}
	j := Quota(q, rate, WithCost(costOf))
	ctx := context.Background()
	p, _, ok := j.Begin(ctx, Call{ID: "u", Request: 4})
	require.True(t, ok)
	_, limit := fieldsOf(p.Limits())
	assert.Equal(t, `"batch";r=6;t=360`, limit)
	p.End(Outcome{})
	bad := errors.New("no cost")
	for _, c := range []struct {
		cost   any
		status int
	}{{11, 413}, {-1, 400}, {bad, 0}} {
		_, ref, ok := j.Begin(ctx, Call{ID: "u", Request: c.cost})
		require.False(t, ok, "cost %v admitted", c.cost)
		assert.Equal(t, ReasonBadCost, ref.Reason)
		if c.status == 0 {
			require.ErrorIs(t, ref.Err, bad)
			continue
		}
		require.ErrorIs(t, ref.Err, store.ErrInvalid)
		var hs interface{ HTTPStatus() int }
		require.ErrorAs(t, ref.Err, &hs)
		assert.Equal(t, c.status, hs.HTTPStatus(), "cost %v", c.cost)
	}
	d, err := q.Allow(ctx, "u", rate, 0)
	require.NoError(t, err)
	assert.Equal(t, 6, d.Remaining, "charged for refused costs")

	// Other jobs never call the cost function.
	l := Lock(newLock(t, throttle.LockConfig{Name: "submit"}), WithCost(costOf))
	p = mustBegin(t, l, "u")
	p.End(Outcome{})
}

// TestCountOnlyFailures: a success is refunded, a failure is not.
func TestCountOnlyFailures(t *testing.T) {
	q := newQuota(t, throttle.QuotaConfig{Name: "login"})
	rate := throttle.Rate{Limit: 2, Window: time.Hour}
	j := Quota(q, rate, CountOnlyFailures())
	for _, o := range []Outcome{{}, {}, {}, {}, {}, {Failed: true}, {Failed: true, Panicked: true}} {
		p := mustBegin(t, j, "u")
		p.End(o)
	}
	_, ref, ok := begin(j, "u")
	require.False(t, ok, "a third failure admitted")
	assert.Equal(t, ReasonContended, ref.Reason)
	assert.Equal(t, []string{"login"}, ref.Violated())
}

// TestRatesOfTheCall: a function's rates apply to each call; one that
// cannot be decided refuses the call with ReasonBadRate.
func TestRatesOfTheCall(t *testing.T) {
	j := Quota(newQuota(t, throttle.QuotaConfig{Name: "search"}), func(c Call) throttle.Rate {
		if c.ID == "bad" {
			return throttle.Rate{}
		}
		return throttle.Rate{Limit: c.Request.(int), Window: time.Minute}
	})
	p, _, ok := j.Begin(context.Background(), Call{ID: "u", Request: 20})
	require.True(t, ok)
	policy, limit := fieldsOf(p.Limits())
	assert.Equal(t, `"search";q=20;w=60`, policy)
	assert.Equal(t, `"search";r=19;t=3`, limit)
	_, ref, ok := j.Begin(context.Background(), Call{ID: "bad", Request: 20})
	require.False(t, ok)
	assert.Equal(t, ReasonBadRate, ref.Reason)
	policy, _ = fieldsOf(&ref.Limits)
	assert.Empty(t, policy, "a function's rates have no policy before a decision")
	assert.PanicsWithValue(t, "flow: Quota needs a non-nil rate function", func() {
		Quota(newQuota(t, throttle.QuotaConfig{Name: "x"}), (func(Call) throttle.Rate)(nil))
	})
}

// TestQuotaDryRun: under DryRun a spent quota lets the call through,
// holding nothing, with the fields of the refusal.
func TestQuotaDryRun(t *testing.T) {
	j := Quota(newQuota(t, throttle.QuotaConfig{Name: "search", Options: throttle.Options{DryRun: true, Logger: quiet}}),
		throttle.Rate{Limit: 1, Window: time.Minute})
	for range 3 {
		p := mustBegin(t, j, "u")
		_, limit := fieldsOf(p.Limits())
		assert.Equal(t, `"search";r=0;t=60`, limit)
		p.End(Outcome{})
	}
}
