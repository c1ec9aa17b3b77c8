package promthrottle_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// One Observer, registered once, counts the decisions of every limiter
// whose Options name it; /metrics serves them. A double submission shows as
// one admitted and one rejected request of the submit lock.
func Example() {
	obs := promthrottle.New()
	reg := prometheus.NewRegistry() // or prometheus.MustRegister(obs)
	reg.MustRegister(obs)

	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit",
		Options: throttle.Options{Observer: obs}})
	if err != nil {
		panic(err)
	}
	submit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), keyfuncs.Header("X-User-ID"))(submit))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.Header.Set("X-User-ID", "42")
		mux.ServeHTTP(httptest.NewRecorder(), req)
	}

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	lines := bufio.NewScanner(rec.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "throttle_requests_total{") {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// throttle_requests_total{mode="dedupe",outcome="admitted",policy="submit"} 1
	// throttle_requests_total{mode="dedupe",outcome="rejected",policy="submit"} 1
}

// An Observer given the process's memory stores reports how many keys they
// hold, at every scrape.
func ExampleNew() {
	mem := memstore.New()
	obs := promthrottle.New(mem)
	reg := prometheus.NewRegistry()
	reg.MustRegister(obs)

	lock, err := throttle.NewLock(mem, throttle.LockConfig{Name: "submit", Options: throttle.Options{Observer: obs}})
	if err != nil {
		panic(err)
	}
	for _, user := range []string{"ann", "bob", "cy"} {
		if _, err := lock.Admit(context.Background(), user); err != nil {
			panic(err)
		}
	}

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "throttle_memstore_keys" {
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	// Output:
	// throttle_memstore_keys 3
}

// An overload limiter reports its decisions as events to the Observer in
// its Config, and its state, read at every scrape, once given to Overload:
// here a request holds one of its permits.
func ExampleObserver_Overload() {
	obs := promthrottle.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(obs)

	report, err := overload.New(overload.Config{Name: "report", Observer: obs})
	if err != nil {
		panic(err)
	}
	obs.Overload(report)
	p, err := report.Acquire(context.Background(), overload.Normal)
	if err != nil {
		panic(err)
	}
	defer p.End()

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "throttle_overload_limit", "throttle_overload_in_flight", "throttle_overload_queued":
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	// Output:
	// throttle_overload_in_flight 1
	// throttle_overload_limit 8
	// throttle_overload_queued 0
}
