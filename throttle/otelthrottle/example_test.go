package otelthrottle_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/otelthrottle"
)

// A Dedupe lock measured with OpenTelemetry: the second submission of a
// user is turned away, and throttle.requests counts both outcomes. A real
// program would give the MeterProvider a periodic reader and an exporter
// (OTLP, say) instead of the manual reader that prints here.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	obs, err := otelthrottle.New(mp)
	if err != nil {
		panic(err)
	}
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit",
		Options: throttle.Options{Observer: obs}})
	if err != nil {
		panic(err)
	}
	submit := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	h := nethttp.Middleware(guard.Lock(lock), keyfuncs.Header("X-User-Id"))(submit)

	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		r.Header.Set("X-User-Id", "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println("status", w.Code)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, isSum := m.Data.(metricdata.Sum[int64]); isSum && m.Name == "throttle.requests" {
				for _, dp := range sum.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value))
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// status 201
	// status 429
	// throttle.requests{throttle.mode=dedupe,throttle.outcome=admitted,throttle.policy=submit} 1
	// throttle.requests{throttle.mode=dedupe,throttle.outcome=rejected,throttle.policy=submit} 1
}
