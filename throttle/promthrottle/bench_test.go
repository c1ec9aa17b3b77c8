package promthrottle_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/otelthrottle"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// BenchmarkMiddleware measures what the Observer adds to a request: the
// nethttp middleware over a memstore with a Dedupe lock, side by side
// without an Observer ("none"), with one that does nothing
// ("noop-observer": what the core spends on reporting, such as timing the
// store call), with a promthrottle Observer ("promthrottle") and with an
// otelthrottle Observer on the OpenTelemetry SDK ("otelthrottle": a meter
// provider whose manual reader is never collected, and no span), as
// internal/adaptertest.Bench measures the adapters.
// One goroutine serves b.N requests from b.N distinct users, so every
// request is admitted, reports a store call and an admission (two
// Observes), and b.N keys are held at the end (the store has room for
// them). The Observer's series exist from the first request on; the
// difference between the two is its cost per request.
func BenchmarkMiddleware(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchMiddleware(b, nil) })
	b.Run("noop-observer", func(b *testing.B) { benchMiddleware(b, noop{}) })
	b.Run("promthrottle", func(b *testing.B) { benchMiddleware(b, promthrottle.New()) })
	b.Run("otelthrottle", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		obs, err := otelthrottle.New(mp)
		require.NoError(b, err)
		benchMiddleware(b, obs)
	})
}

// noop is an Observer that does nothing.
type noop struct{}

func (noop) Observe(context.Context, throttle.Event) {}

func benchMiddleware(b *testing.B, obs throttle.Observer) {
	// A Timeout of a second: a GC pause must not turn a measured request
	// into a (cheaper) fail-open.
	st := memstore.New(memstore.WithMaxKeys(2*b.N + 4096))
	l := newLock(b, st, obs, throttle.LockConfig{Name: "submit", Options: throttle.Options{Timeout: time.Second}})
	adaptertest.Drive(b, guarded(guard.Lock(l), app), http.StatusCreated, adaptertest.DistinctIDs(b.N))
}

// BenchmarkObserve measures one Observe of an admission, on one goroutine
// and on GOMAXPROCS goroutines reporting for the same policy (so sharing
// its counter's cache line, the worst case).
func BenchmarkObserve(b *testing.B) {
	ctx := context.Background()
	e := throttle.Event{Kind: "admitted", Policy: "submit"}
	b.Run("serial", func(b *testing.B) {
		obs := promthrottle.New()
		obs.Observe(ctx, e)
		b.ReportAllocs()
		for b.Loop() {
			obs.Observe(ctx, e)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		obs := promthrottle.New()
		obs.Observe(ctx, e)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				obs.Observe(ctx, e)
			}
		})
	})
	b.Run("store-call", func(b *testing.B) {
		obs := promthrottle.New()
		call := throttle.Event{Kind: "store_call", Policy: "submit", Op: "acquire", Latency: 80 * time.Microsecond}
		obs.Observe(ctx, call)
		b.ReportAllocs()
		for b.Loop() {
			obs.Observe(ctx, call)
		}
	})
}
