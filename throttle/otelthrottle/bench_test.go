package otelthrottle_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/otelthrottle"
)

// BenchmarkObserve is the Observer alone, per event, on a warm policy:
// an admission (a counter) and a store call (a histogram), without and
// with a recording span (which adds a span event).
func BenchmarkObserve(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelthrottle.New(mp)
	if err != nil {
		b.Fatal(err)
	}
	admitted := throttle.Event{Kind: "admitted", Policy: "submit"}
	call := throttle.Event{Kind: "store_call", Policy: "submit", Op: "acquire", Latency: 80 * time.Microsecond}
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
