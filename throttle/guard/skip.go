package guard

import "net/http"

// Skip lets the requests for which skip returns true through unguarded, in
// every adapter: they go straight to the rest of the chain with no store
// call and no RateLimit fields, and hold, record or are charged nothing.
// It serves allow-lists, health checks and internal callers on a guarded
// route. skip runs for every request, before anything else the guard does
// (the adapter has built the key already), so it should be cheap; nil
// skips nothing.
func Skip(skip func(r *http.Request) bool) Option {
	return func(g *Guard) { g.skip = skip }
}

// skipped reports whether Skip lets r through unguarded.
func (g *Guard) skipped(r *http.Request) bool {
	return g.skip != nil && g.skip(r)
}
