package otelthrottle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/otelthrottle"
)

// discard is a ResponseWriter that keeps the status only, so that the
// benchmark measures the middleware and the Observer, not a recorder.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }

// BenchmarkMiddleware is the nethttp middleware over a memstore, Dedupe,
// b.N distinct users on one goroutine (every request admitted), without an
// Observer and with an otelthrottle Observer on an SDK MeterProvider (a
// ManualReader, never collected) and no span in the context. The
// difference is the Observer's cost per request: one admission and one
// store call recorded, plus the two clock readings that time the call.
func BenchmarkMiddleware(b *testing.B) {
	b.Run("no-observer", func(b *testing.B) { benchMiddleware(b, nil) })
	b.Run("otel", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		obs, err := otelthrottle.New(otelthrottle.WithMeterProvider(mp))
		if err != nil {
			b.Fatal(err)
		}
		benchMiddleware(b, obs)
	})
}

func benchMiddleware(b *testing.B, obs throttle.Observer) {
	// Room for every key (twice over: the bound is per shard), and a
	// Timeout of a second so that a GC pause never turns a request into
	// a cheaper fail-open.
	st := memstore.New(memstore.WithMaxKeys(2*b.N + 4096))
	l, err := throttle.New(st, throttle.Policy{Name: "submit", Timeout: time.Second, Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	h := nethttp.Middleware(l, keyfuncs.Header(userHeader))(http.HandlerFunc(
		func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	val := []string{""}
	r.Header[userHeader] = val
	w := &discard{h: make(http.Header)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		val[0] = ids[i]
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != http.StatusCreated {
			b.Fatalf("request %d: status %d", i, w.status)
		}
	}
}

// BenchmarkObserve is the Observer alone, per event, on a warm policy:
// an admission (a counter) and a store call (a histogram), without and
// with a recording span (which adds a span event).
func BenchmarkObserve(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelthrottle.New(otelthrottle.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	admitted := throttle.Event{Kind: throttle.Admitted, Policy: "submit"}
	call := throttle.Event{Kind: throttle.StoreCall, Policy: "submit", Op: "acquire", Latency: 80 * time.Microsecond}
	run := func(b *testing.B, ctx context.Context, e throttle.Event) {
		b.ReportAllocs()
		for b.Loop() {
			obs.Observe(ctx, e)
		}
	}
	b.Run("admitted", func(b *testing.B) { run(b, context.Background(), admitted) })
	b.Run("store-call", func(b *testing.B) { run(b, context.Background(), call) })
	b.Run("store-call-recording-span", func(b *testing.B) {
		tp := newSpanProvider(b)
		ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
		defer span.End()
		run(b, ctx, call)
	})
}

// newSpanProvider returns a TracerProvider whose spans record (and keep at
// most the SDK's default of 128 events each) but go nowhere.
func newSpanProvider(b *testing.B) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}
