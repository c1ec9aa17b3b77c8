package promthrottle_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/promthrottle"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestMain checks that no test leaves a goroutine behind: lease refreshers,
// HTTP servers and their connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quiet keeps the limiters' store-error and dry-run log lines out of the
// test output.
var quiet = slog.New(slog.DiscardHandler)

// userHeader carries the identity the test requests are keyed on.
const userHeader = "X-User-ID"

// newRegistry returns a fresh registry with obs registered in it.
func newRegistry(t testing.TB, obs *promthrottle.Observer) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(obs))
	return reg
}

// observed returns o with obs as its Observer and the quiet logger.
func observed(obs throttle.Observer, o throttle.Options) throttle.Options {
	o.Observer, o.Logger = obs, quiet
	return o
}

// newLock returns a lock on st configured by c, observed by obs, or fails
// the test.
func newLock(t testing.TB, st store.Store, obs throttle.Observer, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	c.Options = observed(obs, c.Options)
	l, err := throttle.NewLock(st, c)
	require.NoError(t, err, "throttle.NewLock(%q)", c.Name)
	return l
}

// newQuota returns a quota on st configured by c, observed by obs, or
// fails the test.
func newQuota(t testing.TB, st store.Store, obs throttle.Observer, c throttle.QuotaConfig) *throttle.Quota {
	t.Helper()
	c.Options = observed(obs, c.Options)
	q, err := throttle.NewQuota(st, c)
	require.NoError(t, err, "throttle.NewQuota(%q)", c.Name)
	return q
}

// guarded returns app behind the nethttp middleware of g, keyed on
// userHeader.
func guarded(g *guard.Guard, app http.Handler) http.Handler {
	return nethttp.Middleware(g, keyfuncs.Header(userHeader))(app)
}

// families indexes gathered metric families by name.
type families map[string]*dto.MetricFamily

// gather gathers reg.
func gather(t testing.TB, reg prometheus.Gatherer) families {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err, "gather")
	out := families{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// labelString returns m's labels as "name=value,..." in name order: the
// key of a series in the maps below.
func labelString(m *dto.Metric) string {
	var parts []string
	for _, lp := range m.GetLabel() {
		parts = append(parts, lp.GetName()+"="+lp.GetValue())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// values returns the value of each series of a counter or gauge family,
// and, for a histogram, its sample count, by labelString. A family that is
// absent has no series.
func (fs families) values(t testing.TB, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	mf := fs[name]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		var v float64
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			v = float64(m.GetHistogram().GetSampleCount())
		default:
			require.Failf(t, "unexpected type", "%s: %v", name, mf.GetType())
		}
		out[labelString(m)] = v
	}
	return out
}

// value returns the value (or the sample count) of one series of name, and
// 0 when it does not exist.
func (fs families) value(t testing.TB, name, labels string) float64 {
	t.Helper()
	return fs.values(t, name)[labels]
}

// checkSeries fails the test unless name has exactly the series of want,
// with their values (or sample counts).
func checkSeries(t testing.TB, fs families, name string, want map[string]float64) {
	t.Helper()
	if want == nil {
		want = map[string]float64{}
	}
	assert.Equal(t, want, fs.values(t, name), "series of %s", name)
}

// observeAll tells obs of one event of every kind, under policy, so that
// every family exists.
func observeAll(obs throttle.Observer, policy string) {
	ctx := context.Background()
	for _, e := range allEvents(policy) {
		obs.Observe(ctx, e)
	}
}

// allEvents returns one event of every kind the core reports (and a failed
// store call of every op), under policy.
func allEvents(policy string) []throttle.Event {
	var out []throttle.Event
	for _, k := range []string{"admitted", "rejected", "dry_run_rejected", "failed_open", "failed_closed",
		"fallback", "key_error", "store_call", "released", "extended", "lost", "fallback_on", "fallback_off",
		"replayed", "shed", "full", "near_hit"} {
		e := throttle.Event{Kind: k, Policy: policy, Mode: throttle.Exclusive}
		switch k {
		case "store_call":
			for _, op := range []string{"acquire", "release", "extend", "quota"} {
				e.Op, e.Latency = op, 300*time.Microsecond
				out = append(out, e)
				e.Err = true
				out = append(out, e)
				e.Err = false
			}
			continue
		case "released":
			e.Hold, e.Reason = 2*time.Second, "done"
		case "rejected", "dry_run_rejected":
			e.RetryAfter = time.Second
		}
		out = append(out, e)
	}
	// An overload limiter's admission after a wait in its queue.
	return append(out, throttle.Event{Kind: "admitted", Policy: policy, Mode: throttle.ModeOverload, Latency: 3 * time.Millisecond})
}

// newOverload returns an overload limiter named name, or fails the test.
func newOverload(t testing.TB, name string) *overload.Limiter {
	t.Helper()
	l, err := overload.New(overload.Config{Name: name})
	require.NoError(t, err)
	return l
}

// labels builds a labelString from name=value pairs given in any order.
func labels(pairs ...string) string {
	s := slices.Clone(pairs)
	slices.Sort(s)
	return strings.Join(s, ",")
}

// req returns a labels string for throttle_requests_total.
func req(policy, mode, outcome string) string {
	return labels("policy="+policy, "mode="+mode, "outcome="+outcome)
}

// op returns a labels string for the store metrics.
func op(policy, op string) string { return labels("policy="+policy, "op="+op) }

// hold returns a labels string for throttle_hold_duration_seconds.
func hold(policy, mode, reason string) string {
	return labels("policy="+policy, "mode="+mode, "reason="+reason)
}

// event returns a labels string for throttle_lease_events_total.
func event(policy, ev string) string { return labels("policy="+policy, "event="+ev) }
