package otelthrottle_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/otelthrottle"
	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/store"
)

// userHeader carries the user id, the requests' key; spanHeader names the
// request's span, so that span names need not contain the user id.
const (
	userHeader = "X-User-Id"
	spanHeader = "X-Test-Span"
)

// quiet drops the store-error logs of the failing-store tests.
var quiet = slog.New(slog.DiscardHandler)

// env is an Observer over an SDK MeterProvider with a ManualReader, and a
// TracerProvider whose ended spans a SpanRecorder keeps.
type env struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer
	obs    *otelthrottle.Observer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := otelthrottle.New(mp)
	require.NoError(t, err)
	return &env{reader: reader, spans: spans, tracer: tp.Tracer("test"), obs: obs}
}

// lock returns the guard of a lock over st configured by c, observed by
// e's Observer.
func (e *env) lock(t *testing.T, st store.Store, c throttle.LockConfig) *guard.Guard {
	t.Helper()
	c.Observer = e.obs
	l, err := throttle.NewLock(st, c)
	require.NoError(t, err)
	return guard.Lock(l)
}

// quota returns the guard of a quota over st configured by c under rate r,
// observed by e's Observer.
func (e *env) quota(t *testing.T, st store.Store, c throttle.QuotaConfig, r throttle.Rate) *guard.Guard {
	t.Helper()
	c.Observer = e.obs
	q, err := throttle.NewQuota(st, c)
	require.NoError(t, err)
	return guard.Quota(q, r)
}

// handler returns next behind a nethttp.Middleware of g (keyed by
// userHeader), behind an outer handler that runs each request in a span of
// its own, named by spanHeader, as tracing middleware would.
func (e *env) handler(g *guard.Guard, next http.Handler) http.Handler {
	return e.traced(nethttp.Middleware(g, keyfuncs.Header(userHeader))(next))
}

// traced runs each request of guarded in a span of its own, named by
// spanHeader.
func (e *env) traced(guarded http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := e.tracer.Start(r.Context(), r.Header.Get(spanHeader))
		defer span.End()
		guarded.ServeHTTP(w, r.WithContext(ctx))
	})
}

// serve sends a request from user (none when empty) in a span named span,
// and returns its status.
func serve(h http.Handler, user, span string) int {
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	if user != "" {
		r.Header.Set(userHeader, user)
	}
	r.Header.Set(spanHeader, span)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// wantStatus fails the test unless got is want.
func wantStatus(t *testing.T, what string, got, want int) {
	t.Helper()
	require.Equal(t, want, got, "%s: status", what)
}

// ok answers 201.
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })

// collect reads every metric recorded so far.
func (e *env) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
	return rm
}

// find returns the metric called name, or nil when nothing recorded it.
func find(t *testing.T, rm metricdata.ResourceMetrics, name string) *metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, "github.com/go-throttle/throttle/throttle/otelthrottle", sm.Scope.Name, "metrics' scope")
		for i := range sm.Metrics {
			if sm.Metrics[i].Name == name {
				return &sm.Metrics[i]
			}
		}
	}
	return nil
}

// key writes an attribute set as "k=v,k=v", sorted by key.
func key(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// counts returns a counter's sums by attribute set.
func counts(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m := find(t, rm, name)
	if m == nil {
		return out
	}
	sum, isSum := m.Data.(metricdata.Sum[int64])
	require.True(t, isSum && sum.IsMonotonic && sum.Temporality == metricdata.CumulativeTemporality,
		"%s is %T, want a cumulative monotonic int64 sum", name, m.Data)
	for _, dp := range sum.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// histogram returns a histogram's points by attribute set, after checking
// its unit and that its boundaries run from first to last.
func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string, first, last float64) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	m := find(t, rm, name)
	if m == nil {
		return out
	}
	require.Equal(t, "s", m.Unit, "%s: unit", name)
	h, isHist := m.Data.(metricdata.Histogram[float64])
	require.True(t, isHist, "%s is %T, want a float64 histogram", name, m.Data)
	for _, dp := range h.DataPoints {
		b := dp.Bounds
		require.NotEmpty(t, b, "%s: bounds", name)
		require.Equal(t, []float64{first, last}, []float64{b[0], b[len(b)-1]}, "%s: bounds %v", name, b)
		out[key(dp.Attributes)] = dp
	}
	return out
}

// histCounts returns how many values each of a histogram's series holds.
func histCounts(points map[string]metricdata.HistogramDataPoint[float64]) map[string]uint64 {
	out := map[string]uint64{}
	for k, dp := range points {
		out[k] = dp.Count
	}
	return out
}

// equal fails the test unless got and want hold the same series and values.
func equal[V comparable](t *testing.T, what string, got, want map[string]V) {
	t.Helper()
	require.Equal(t, want, got, what)
}

// Attribute sets in the form key writes them.
func outcome(policy, mode, outcome string) string {
	return "throttle.mode=" + mode + ",throttle.outcome=" + outcome + ",throttle.policy=" + policy
}

func storeOp(policy, op string, failed bool) string {
	s := "throttle.policy=" + policy + ",throttle.store.operation=" + op
	if failed {
		s = "error.type=_OTHER," + s
	}
	return s
}

func hold(policy, mode, reason string) string {
	return "throttle.mode=" + mode + ",throttle.policy=" + policy + ",throttle.release.reason=" + reason
}

func leaseEvent(policy, event string) string {
	return "throttle.lease.event=" + event + ",throttle.policy=" + policy
}

// span returns the ended span called name.
func (e *env) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range e.spans.Ended() {
		if s.Name() == name {
			return s
		}
	}
	require.Failf(t, "no span", "%q", name)
	return nil
}

// eventNames returns the names of a span's events, in order.
func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, ev := range s.Events() {
		out = append(out, ev.Name)
	}
	return out
}

// wantEvents fails the test unless the span called name has events of
// exactly the names want, in order.
func (e *env) wantEvents(t *testing.T, name string, want ...string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := e.span(t, name)
	require.Equal(t, want, eventNames(s), "span %q: events", name)
	return s
}

// attrs returns an event's attributes by key.
func attrs(ev sdktrace.Event) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range ev.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

// checkStoreEvent checks a store call's span event: its policy, operation,
// a positive duration of at most limit seconds, and error=true exactly
// when failed.
func checkStoreEvent(t *testing.T, ev sdktrace.Event, policy, op string, failed bool) {
	t.Helper()
	a := attrs(ev)
	require.Equal(t, "throttle.store."+op, ev.Name, "store event %v", ev.Attributes)
	require.Equal(t, policy, a[attribute.Key("throttle.policy")].AsString(), "store event %s: policy", ev.Name)
	require.Equal(t, op, a[attribute.Key("throttle.store.operation")].AsString(), "store event %s: operation", ev.Name)
	d := a[attribute.Key("throttle.store.duration")]
	require.Equal(t, attribute.FLOAT64, d.Type(), "store event %s: duration %v", ev.Name, d.String())
	require.Positive(t, d.AsFloat64(), "store event %s: duration", ev.Name)
	e, hasErr := a[attribute.Key("error")]
	require.Equal(t, failed, hasErr, "store event %s: error attribute %v", ev.Name, ev.Attributes)
	if failed {
		require.True(t, e.AsBool(), "store event %s: error attribute %v", ev.Name, ev.Attributes)
	}
	require.Len(t, ev.Attributes, map[bool]int{false: 3, true: 4}[failed], "store event %s: attributes", ev.Name)
}

// checkRejectionEvent checks a rejection's span event: its name, policy,
// mode, and a retry_after in (0, max].
func checkRejectionEvent(t *testing.T, ev sdktrace.Event, name, policy, mode string, max time.Duration) {
	t.Helper()
	a := attrs(ev)
	require.Equal(t, name, ev.Name, "rejection event %v", ev.Attributes)
	require.Len(t, a, 3, "rejection event %s: attributes", ev.Name)
	require.Equal(t, policy, a[attribute.Key("throttle.policy")].AsString(), "rejection event %s: policy", ev.Name)
	require.Equal(t, mode, a[attribute.Key("throttle.mode")].AsString(), "rejection event %s: mode", ev.Name)
	r := a[attribute.Key("throttle.retry_after")]
	require.Equal(t, attribute.FLOAT64, r.Type(), "rejection event: retry_after %v", r.String())
	require.Positive(t, r.AsFloat64(), "rejection event: retry_after")
	require.LessOrEqual(t, r.AsFloat64(), max.Seconds(), "rejection event: retry_after")
}

// noUser fails the test when any attribute of a metric series, span or
// span event contains one of users.
func (e *env) noUser(t *testing.T, users ...string) {
	t.Helper()
	check := func(where string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			for _, u := range users {
				require.NotContains(t, kv.Value.String(), u, "%s: attribute %s contains a user", where, kv.Key)
				require.NotContains(t, string(kv.Key), u, "%s: attribute key contains a user", where)
			}
		}
	}
	rm := e.collect(t)
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes.ToSlice())
					n++
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes.ToSlice())
					n++
				}
			default:
				require.Failf(t, "unexpected data", "%s: %T", m.Name, m.Data)
			}
		}
	}
	for _, s := range e.spans.Ended() {
		check("span "+s.Name(), s.Attributes())
		for _, ev := range s.Events() {
			check("span event "+ev.Name, ev.Attributes)
			n++
		}
	}
	require.NotZero(t, n, "nothing recorded to check")
}

func TestDedupe(t *testing.T) {
	e := newEnv(t)
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(userHeader) == "carol-7" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	h := e.handler(e.lock(t, memstore.New(), throttle.LockConfig{Name: "submit", TTL: time.Minute}), failing)
	wantStatus(t, "first", serve(h, "alice-42", "first"), http.StatusCreated)
	wantStatus(t, "duplicate", serve(h, "alice-42", "duplicate"), http.StatusTooManyRequests)
	wantStatus(t, "other user", serve(h, "bob-13", "other"), http.StatusCreated)
	wantStatus(t, "failing", serve(h, "carol-7", "failing"), http.StatusInternalServerError)

	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("submit", "dedupe", "admitted"): 3,
		outcome("submit", "dedupe", "rejected"): 1,
	})
	equal(t, "store calls", histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1)), map[string]uint64{
		storeOp("submit", "acquire", false): 4,
		storeOp("submit", "release", false): 1, // carol's failure gives the key back
	})
	equal(t, "holds", histCounts(histogram(t, rm, "throttle.hold.duration", 0.001, 3600)), map[string]uint64{
		hold("submit", "dedupe", "failed"): 1,
	})
	equal(t, "lease events", counts(t, rm, "throttle.lease.events"), map[string]int64{})

	s := e.wantEvents(t, "first", "throttle.store.acquire")
	checkStoreEvent(t, s.Events()[0], "submit", "acquire", false)
	s = e.wantEvents(t, "duplicate", "throttle.store.acquire", "throttle.rejected")
	checkStoreEvent(t, s.Events()[0], "submit", "acquire", false)
	checkRejectionEvent(t, s.Events()[1], "throttle.rejected", "submit", "dedupe", time.Minute)
	e.wantEvents(t, "other", "throttle.store.acquire")
	s = e.wantEvents(t, "failing", "throttle.store.acquire", "throttle.store.release")
	checkStoreEvent(t, s.Events()[1], "submit", "release", false)
	e.noUser(t, "alice", "bob", "carol")
}

func TestQuota(t *testing.T) {
	e := newEnv(t)
	h := e.handler(e.quota(t, memstore.New(), throttle.QuotaConfig{Name: "search"},
		throttle.Rate{Limit: 2, Window: time.Hour}), ok)
	for i, want := range []int{http.StatusCreated, http.StatusCreated, http.StatusTooManyRequests} {
		wantStatus(t, fmt.Sprint("request ", i), serve(h, "dave-99", fmt.Sprint("q", i)), want)
	}
	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("search", "quota", "admitted"): 2,
		outcome("search", "quota", "rejected"): 1,
	})
	equal(t, "store calls", histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1)), map[string]uint64{
		storeOp("search", "quota", false): 3,
	})
	equal(t, "holds", histCounts(histogram(t, rm, "throttle.hold.duration", 0.001, 3600)), map[string]uint64{})
	s := e.wantEvents(t, "q0", "throttle.store.quota")
	checkStoreEvent(t, s.Events()[0], "search", "quota", false)
	s = e.wantEvents(t, "q2", "throttle.store.quota", "throttle.rejected")
	// The quota refills one request every half hour.
	checkRejectionEvent(t, s.Events()[1], "throttle.rejected", "search", "quota", 30*time.Minute)
	e.noUser(t, "dave")
}

func TestKeyError(t *testing.T) {
	e := newEnv(t)
	h := e.handler(e.lock(t, memstore.New(), throttle.LockConfig{Name: "submit"}), ok)
	wantStatus(t, "no user", serve(h, "", "nokey"), http.StatusBadRequest)
	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("submit", "dedupe", "key_error"): 1,
	})
	equal(t, "store calls", histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1)), map[string]uint64{})
	e.wantEvents(t, "nokey") // no store call, and a key error is no rejection event
}

func TestExclusiveRelease(t *testing.T) {
	e := newEnv(t)
	h := e.handler(e.lock(t, memstore.New(), throttle.LockConfig{Name: "export", Mode: throttle.Exclusive}), ok)
	wantStatus(t, "first", serve(h, "erin-5", "x1"), http.StatusCreated)
	wantStatus(t, "after release", serve(h, "erin-5", "x2"), http.StatusCreated)
	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("export", "exclusive", "admitted"): 2,
	})
	equal(t, "store calls", histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1)), map[string]uint64{
		storeOp("export", "acquire", false): 2,
		storeOp("export", "release", false): 2,
	})
	holds := histogram(t, rm, "throttle.hold.duration", 0.001, 3600)
	equal(t, "holds", histCounts(holds), map[string]uint64{hold("export", "exclusive", "done"): 2})
	require.Positive(t, holds[hold("export", "exclusive", "done")].Sum, "hold time sum")
	s := e.wantEvents(t, "x1", "throttle.store.acquire", "throttle.store.release")
	checkStoreEvent(t, s.Events()[0], "export", "acquire", false)
	checkStoreEvent(t, s.Events()[1], "export", "release", false)
	e.noUser(t, "erin")
}

func TestPanicRelease(t *testing.T) {
	e := newEnv(t)
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	inner := e.handler(e.lock(t, memstore.New(), throttle.LockConfig{Name: "submit"}), panicking)
	var recovered atomic.Value
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				recovered.Store(p)
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		inner.ServeHTTP(w, r)
	})
	wantStatus(t, "panic", serve(h, "frank-3", "panic"), http.StatusInternalServerError)
	require.Equal(t, "boom", recovered.Load(), "recovered: want the handler's panic")
	// The panic released the key: the user may try again at once.
	wantStatus(t, "retry", serve(h, "frank-3", "retry"), http.StatusInternalServerError)
	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("submit", "dedupe", "admitted"): 2,
	})
	equal(t, "holds", histCounts(histogram(t, rm, "throttle.hold.duration", 0.001, 3600)), map[string]uint64{
		hold("submit", "dedupe", "panic"): 2,
	})
	// The SDK's span.End records the panic going past it as "exception".
	e.wantEvents(t, "panic", "throttle.store.acquire", "throttle.store.release", "exception")
	e.noUser(t, "frank")
}

func TestDryRun(t *testing.T) {
	e := newEnv(t)
	h := e.handler(e.lock(t, memstore.New(), throttle.LockConfig{Name: "submit", TTL: time.Minute,
		Options: throttle.Options{DryRun: true, Logger: quiet}}), ok)
	wantStatus(t, "first", serve(h, "gina-8", "d1"), http.StatusCreated)
	wantStatus(t, "duplicate goes ahead", serve(h, "gina-8", "d2"), http.StatusCreated)
	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("submit", "dedupe", "admitted"):         1,
		outcome("submit", "dedupe", "dry_run_rejected"): 1,
	})
	s := e.wantEvents(t, "d2", "throttle.store.acquire", "throttle.dry_run_rejected")
	checkRejectionEvent(t, s.Events()[1], "throttle.dry_run_rejected", "submit", "dedupe", time.Minute)
	e.noUser(t, "gina")
}

// downStore is a memstore whose acquisitions fail, as a store does whose
// server cannot be reached. The error says that nothing was taken, so the
// lock starts no background release.
type downStore struct{ store.Store }

var errDown = fmt.Errorf("%w: connection refused", store.ErrNotApplied)

func (downStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, errDown
}

func TestStoreFails(t *testing.T) {
	e := newEnv(t)
	st := downStore{memstore.New()}
	open := e.handler(e.lock(t, st, throttle.LockConfig{Name: "open",
		Options: throttle.Options{WhenStoreFails: throttle.FailOpen, Logger: quiet}}), ok)
	closed := e.handler(e.lock(t, st, throttle.LockConfig{Name: "closed",
		Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: quiet}}), ok)
	wantStatus(t, "fail open", serve(open, "hank-1", "open"), http.StatusCreated)
	wantStatus(t, "fail closed", serve(closed, "hank-1", "closed"), http.StatusServiceUnavailable)
	rm := e.collect(t)
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome("open", "dedupe", "failed_open"):     1,
		outcome("closed", "dedupe", "failed_closed"): 1,
	})
	equal(t, "store calls", histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1)), map[string]uint64{
		storeOp("open", "acquire", true):   1,
		storeOp("closed", "acquire", true): 1,
	})
	for _, name := range []string{"open", "closed"} {
		s := e.wantEvents(t, name, "throttle.store.acquire")
		checkStoreEvent(t, s.Events()[0], name, "acquire", true)
	}
	e.noUser(t, "hank")
}

// tap passes events on to an Observer and tells the test of lease events.
type tap struct {
	next     throttle.Observer
	extended atomic.Int64
	lost     atomic.Int64
	once     sync.Once
	first    chan struct{} // closed at the first extension or loss
}

func newTap(next throttle.Observer) *tap { return &tap{next: next, first: make(chan struct{})} }

func (t *tap) Observe(ctx context.Context, e throttle.Event) {
	t.next.Observe(ctx, e)
	switch e.Kind {
	case "extended":
		t.extended.Add(1)
	case "lost":
		t.lost.Add(1)
	default:
		return
	}
	t.once.Do(func() { close(t.first) })
}

// leaseHandler serves an Exclusive lock with a lease of a second (refreshed
// every third of it, with room to spare on a loaded machine, so that the
// lease is extended or found lost before it expires) whose handler returns
// once tap saw its first lease event, or, when the event must cancel the
// request's context, once that is done.
func leaseHandler(t *testing.T, e *env, st store.Store, tp *tap, waitCtx bool) http.Handler {
	t.Helper()
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var wait <-chan struct{} = tp.first
		if waitCtx {
			wait = r.Context().Done()
		}
		select {
		case <-wait:
			w.WriteHeader(http.StatusOK)
		case <-time.After(time.Minute):
			assert.Fail(t, "no lease event within a minute")
			w.WriteHeader(http.StatusGatewayTimeout)
		}
	})
	l, err := throttle.NewLock(st, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: time.Second,
		Options: throttle.Options{Observer: tp, Logger: quiet}})
	require.NoError(t, err)
	return e.handler(guard.Lock(l), next)
}

func TestLeaseExtended(t *testing.T) {
	e := newEnv(t)
	tp := newTap(e.obs)
	h := leaseHandler(t, e, memstore.New(), tp, false)
	wantStatus(t, "long request", serve(h, "ivy-2", "long"), http.StatusOK)
	n := tp.extended.Load()
	require.NotZero(t, n, "the tap saw no extension")
	rm := e.collect(t)
	equal(t, "lease events", counts(t, rm, "throttle.lease.events"), map[string]int64{
		leaseEvent("job", "extended"): n,
	})
	stores := histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1))
	require.Equal(t, uint64(n), stores[storeOp("job", "extend", false)], "extend calls (every extension succeeded)")
	// The refresher's context derives from the request's, so the
	// extensions are on the request's span.
	s := e.span(t, "long")
	var extends int64
	for _, ev := range s.Events() {
		if ev.Name == "throttle.store.extend" {
			checkStoreEvent(t, ev, "job", "extend", false)
			extends++
		}
	}
	require.Equal(t, n, extends, "extend events on the span")
	e.noUser(t, "ivy")
}

// losingStore is a memstore whose extensions find the key gone, as when
// another process took it after the lease ran out.
type losingStore struct{ *memstore.Store }

func (losingStore) Extend(context.Context, string, string, time.Duration) (store.Outcome, error) {
	return store.Gone, nil
}

func TestLeaseLost(t *testing.T) {
	e := newEnv(t)
	tp := newTap(e.obs)
	h := leaseHandler(t, e, losingStore{memstore.New()}, tp, true)
	wantStatus(t, "lost lease", serve(h, "jack-4", "lost"), http.StatusOK)
	rm := e.collect(t)
	equal(t, "lease events", counts(t, rm, "throttle.lease.events"), map[string]int64{
		leaseEvent("job", "lost"): 1,
	})
	equal(t, "holds", histCounts(histogram(t, rm, "throttle.hold.duration", 0.001, 3600)), map[string]uint64{
		hold("job", "exclusive", "done"): 1,
	})
	e.noUser(t, "jack")
}

// TestNoSpan serves requests whose context carries no span, and one whose
// span is not sampled: metrics are recorded, and nothing fails.
func TestNoSpan(t *testing.T) {
	e := newEnv(t)
	h := nethttp.Middleware(e.lock(t, memstore.New(), throttle.LockConfig{Name: "submit"}), keyfuncs.Header(userHeader))(ok)
	wantStatus(t, "no span", serve(h, "lee-1", ""), http.StatusCreated)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(e.spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	unsampled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tp.Tracer("test").Start(r.Context(), "unsampled")
		defer span.End()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
	wantStatus(t, "unsampled span", serve(unsampled, "lee-1", ""), http.StatusTooManyRequests)
	require.Empty(t, e.spans.Ended(), "spans recorded")
	equal(t, "requests", counts(t, e.collect(t), "throttle.requests"), map[string]int64{
		outcome("submit", "dedupe", "admitted"): 1,
		outcome("submit", "dedupe", "rejected"): 1,
	})
}

// TestConcurrent records from many goroutines and policies at once, so
// that the race detector sees the attribute sets built and shared, and
// checks that no count is lost.
func TestConcurrent(t *testing.T) {
	e := newEnv(t)
	const goroutines, each = 8, 500
	policies := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				p := policies[(g+i)%len(policies)]
				e.obs.Observe(context.Background(), throttle.Event{Kind: "admitted", Policy: p, Mode: throttle.ModeQuota})
				e.obs.Observe(context.Background(), throttle.Event{Kind: "store_call", Policy: p,
					Mode: throttle.ModeQuota, Op: "quota", Err: i%2 == 0, Latency: time.Millisecond})
			}
		})
	}
	wg.Wait()
	rm := e.collect(t)
	reqs := counts(t, rm, "throttle.requests")
	stores := histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1))
	var total int64
	var calls, failed uint64
	for _, p := range policies {
		total += reqs[outcome(p, "quota", "admitted")]
		calls += stores[storeOp(p, "quota", false)] + stores[storeOp(p, "quota", true)]
		failed += stores[storeOp(p, "quota", true)]
	}
	require.EqualValues(t, goroutines*each, total, "requests")
	require.EqualValues(t, goroutines*each, calls, "store calls")
	require.EqualValues(t, goroutines*each/2, failed, "failed store calls")
	require.Len(t, reqs, len(policies), "request series")
	require.Len(t, stores, 2*len(policies), "store call series")
}

// TestUnknownValues feeds the Observer values the core does not send (an
// unknown store operation, release reason and mode, an empty reason):
// they are recorded under their own names, or "unknown", rather than
// dropped or mixed with known ones; unknown kinds are ignored.
func TestUnknownValues(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.obs.Observe(ctx, throttle.Event{Kind: "store_call", Policy: "p", Op: "scan", Err: true, Latency: time.Millisecond})
	e.obs.Observe(ctx, throttle.Event{Kind: "released", Policy: "p", Mode: throttle.Mode(9), Reason: ""})
	e.obs.Observe(ctx, throttle.Event{Kind: "released", Policy: "p", Reason: "expired"})
	e.obs.Observe(ctx, throttle.Event{Kind: "released", Policy: "p", Reason: "done"})
	e.obs.Observe(ctx, throttle.Event{Kind: "fallback_on", Policy: "p"})
	e.obs.Observe(ctx, throttle.Event{Kind: "no_such_kind", Policy: "p"})
	rm := e.collect(t)
	equal(t, "store calls", histCounts(histogram(t, rm, "throttle.store.duration", 0.00005, 1)), map[string]uint64{
		storeOp("p", "scan", true): 1,
	})
	equal(t, "holds", histCounts(histogram(t, rm, "throttle.hold.duration", 0.001, 3600)), map[string]uint64{
		hold("p", "unknown", "unknown"): 1,
		hold("p", "dedupe", "done"):     1,
		hold("p", "dedupe", "expired"):  1,
	})
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{})
}

// TestSteadyStateAllocs checks that, once a policy's attribute sets exist,
// the Observer adds no allocation of its own to recording a metric: any
// allocation here would be paid by every request.
func TestSteadyStateAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters change allocations")
	}
	e := newEnv(t)
	ctx := context.Background()
	events := []throttle.Event{
		{Kind: "admitted", Policy: "submit"},
		{Kind: "store_call", Policy: "submit", Op: "acquire", Latency: time.Millisecond},
		{Kind: "released", Policy: "submit", Hold: time.Second, Reason: "failed"},
		{Kind: "admitted", Policy: "report", Mode: throttle.ModeOverload, Latency: time.Millisecond},
		{Kind: "released", Policy: "report", Mode: throttle.ModeOverload, Hold: time.Second, Reason: "dropped"},
	}
	for _, ev := range events {
		e.obs.Observe(ctx, ev) // builds the sets and the SDK's series
		assert.Zero(t, testing.AllocsPerRun(100, func() { e.obs.Observe(ctx, ev) }), "%v: allocations per event", ev.Kind)
	}
}

// TestNew checks the provider: the global one for nil, and an error from a
// provider that refuses an instrument.
func TestNew(t *testing.T) {
	_, err := otelthrottle.New(nil)
	require.NoError(t, err, "with the global provider")
	obs, err := otelthrottle.New(refusingProvider{})
	require.ErrorIs(t, err, errRefused, "New with a refusing provider")
	require.Nil(t, obs, "New with a refusing provider")
}

var errRefused = errors.New("instrument refused")

// refusingProvider is a MeterProvider whose meters refuse histograms.
type refusingProvider struct{ noop.MeterProvider }

func (refusingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return refusingMeter{} }

type refusingMeter struct{ noop.Meter }

func (refusingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return noop.Float64Histogram{}, errRefused
}

// TestDescriptions pins each instrument's unit and description.
func TestDescriptions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, k := range []string{"admitted", "store_call", "released", "lost", "near_hit"} {
		e.obs.Observe(ctx, throttle.Event{Kind: k, Policy: "p"})
	}
	e.obs.Observe(ctx, throttle.Event{Kind: "admitted", Policy: "p", Mode: throttle.ModeOverload})
	l, err := overload.New(overload.Config{Name: "p"})
	require.NoError(t, err)
	e.obs.NearCaches(nearCache{}).Overload(l)
	got := map[string]string{}
	for _, sm := range e.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Unit + " " + m.Description
		}
	}
	require.Equal(t, map[string]string{
		"throttle.requests":        "{request} Requests decided by a throttle policy, by outcome.",
		"throttle.store.duration":  "s Duration of the throttle's store calls.",
		"throttle.hold.duration":   "s How long a key was held before it was released.",
		"throttle.lease.events":    "{event} Lease extensions and losses.",
		"throttle.near_cache.hits": "{request} Refusals that the Redis store's near cache answered without a store call.",
		"throttle.near_cache.invalidations": "{entry} Refusals the near caches dropped because Redis reported a change " +
			"of their key, or their tracking connection was lost.",
		"throttle.overload.limit":          "{request} Requests an overload limiter lets be in flight now.",
		"throttle.overload.in_flight":      "{request} Requests holding a permit of an overload limiter now.",
		"throttle.overload.queued":         "{request} Requests waiting in an overload limiter's queue now.",
		"throttle.overload.base_latency":   "s The latency an overload limiter's limit aims near (0 until measured).",
		"throttle.overload.shed":           "{request} Requests an overload limiter shed, by reason.",
		"throttle.overload.canceled":       "{request} Requests that left an overload limiter's queue because their context ended.",
		"throttle.overload.queue.duration": "s How long requests an overload limiter admitted waited in its queue.",
	}, got)
}
