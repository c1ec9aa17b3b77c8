package overload_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/go-throttle/throttle/throttle/overload"
)

// A net/http middleware that keeps a handler out of overload: a request
// takes a permit before the handler runs and ends it after; a shed one
// gets 503 with Retry-After. Health checks are never shed, and requests
// marked as background are shed first.
func Example() {
	lim, err := overload.New(overload.Config{Name: "report"})
	if err != nil {
		panic(err)
	}
	guard := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			prio := overload.Normal
			switch {
			case r.URL.Path == "/healthz":
				prio = overload.NeverShed
			case r.Header.Get("X-Background") != "":
				prio = overload.ShedFirst
			}
			p, err := lim.Acquire(r.Context(), prio)
			var shed *overload.Refusal
			switch {
			case errors.As(err, &shed):
				w.Header().Set("Retry-After", strconv.Itoa(int(shed.RetryAfter.Seconds())))
				http.Error(w, "overloaded, try again later", http.StatusServiceUnavailable)
				return
			case err != nil: // the client left while it waited
				return
			}
			defer p.End()
			next.ServeHTTP(w, r)
		})
	}
	report := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "report") })

	w := httptest.NewRecorder()
	guard(report).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/report", nil))
	fmt.Print(w.Code, " ", w.Body)
	s := lim.Stats()
	fmt.Println("limit", s.Limit, "in flight", s.InFlight, "admitted", s.Admitted)
	// Output:
	// 200 report
	// limit 8 in flight 0 admitted 1
}
