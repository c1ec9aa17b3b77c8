package demo

import (
	"net/http"
	"path"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
	"github.com/go-throttle/throttle/throttle/store"
)

// newMetrics returns the Observer every policy of an example reports to
// (Settings.Observer) and the handler of GET /metrics (Settings.Metrics),
// which serves it, in the Prometheus text format, from a registry of its
// own. The in-memory stores among stores (the store without -redis, the
// fallback of -fail over) are counted in throttle_memstore_keys; the
// overload limiter of GET /api/report is read at each scrape too
// (NewReportLimiter gives it to the Observer's Overload).
func newMetrics(stores ...store.Store) (*promthrottle.Observer, http.Handler) {
	var mem []*memstore.Store
	for _, st := range stores {
		if m, ok := st.(*memstore.Store); ok {
			mem = append(mem, m)
		}
	}
	obs := promthrottle.New(mem...)
	reg := prometheus.NewRegistry()
	reg.MustRegister(obs)
	return obs, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// canonicalPaths answers 400 with a problem for a request whose path is
// not in canonical form, with an empty, "." or ".." segment (/jobs//run,
// /jobs/%2e%2e/run), and hands every other request to h. net/http's
// ServeMux would redirect such a path to its cleaned form (a POST to
// /jobs//run to /jobs/run, which is no job), while gin and echo would match
// it with an empty or dot id: refusing it in front of every router makes
// the three examples answer alike. A trailing slash is left to the router.
func canonicalPaths(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; strings.HasPrefix(p, "/") && p != cleanPath(p) {
			WriteProblem(w, http.StatusBadRequest, `The request path has an empty, "." or ".." segment.`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// cleanPath is path.Clean keeping a trailing slash, as ServeMux cleans.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
