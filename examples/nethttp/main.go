// Command nethttp is a net/http service whose POST /submit accepts one
// submission per user per window and answers the duplicates (double clicks,
// client and proxy retries) with 429 Too Many Requests, and whose GET
// /search allows each user 10 searches a minute.
//
//	go run ./examples/nethttp                          # in-memory store
//	go run ./examples/nethttp -redis 127.0.0.1:6379    # locks shared through Redis
//	curl -i -X POST -H 'X-User-ID: 42' localhost:8080/submit
//	curl -i -H 'X-User-ID: 42' 'localhost:8080/search?q=gcra'
//
// Flags: -addr (default 127.0.0.1:8080), -redis (empty: in-memory store),
// -window (default 5s). The gin and echo examples build the same key for the
// same user, so that all three share locks and quotas when pointed at one
// Redis.
package main

import (
	"encoding/json"
	"net/http"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
)

func main() { demo.Main("nethttp", routes) }

func routes(store throttle.Store, s demo.Settings) (http.Handler, error) {
	// Dedupe is the zero Mode: an accepted submission holds its key for the
	// window; a failed one (status >= 400) frees it so that the user can retry.
	limiter, err := throttle.New(store, throttle.Policy{
		Name:           "submit",
		Window:         s.Window,
		WhenStoreFails: s.WhenStoreFails, // -fail: what a request gets while Redis fails
		Fallback:       s.Fallback,
	})
	if err != nil {
		return nil, err
	}
	// GET /search: a Quota of 10 requests per minute per user, whatever
	// -window says (see demo.SearchPolicy).
	search, err := demo.NewSearchLimiter(store, s)
	if err != nil {
		return nil, err
	}
	// Who is submitting or searching: the X-User-ID header, or the peer's
	// IP without it.
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(limiter, key)(http.HandlerFunc(submit)))
	mux.Handle("GET /search", nethttp.Middleware(search, key)(http.HandlerFunc(searchHandler)))
	mux.HandleFunc("GET /healthz", healthz) // outside the middleware: never throttled
	return mux, nil
}

func submit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "accepted", "server": "nethttp"})
}

func searchHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(demo.SearchJSON(r))
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}
