package main

import (
	"net/http"
	"time"
)

// The server of known capacity that every case guards: slots requests at
// once, each holding its slot for work; a request waits for a free slot
// (and stops waiting when its client leaves). capacity is its throughput.
const (
	slots    = 4
	work     = 50 * time.Millisecond
	capacity = float64(slots) * float64(time.Second) / float64(work) // 80 requests a second
)

// report is GET /api/report of DESIGN.md §6: four slots, 50 ms each.
func report() http.Handler {
	free := make(chan struct{}, slots)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case free <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(work)
		<-free
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"report":"ok"}` + "\n"))
	})
}
