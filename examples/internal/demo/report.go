package demo

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// The service behind GET /api/report: ReportSlots slots, each held for
// ReportWork, so ReportSlots/ReportWork (80) requests a second at most; a
// request waits for a free slot.
const (
	ReportSlots = 4
	ReportWork  = 50 * time.Millisecond
)

// NewReportLimiter returns the adaptive limit of GET /api/report,
// "report": per process, nothing to tune (see package overload). Its
// events go to s.Observer, and GET /metrics reads its limit, requests in
// flight and queued, and sheds by reason at each scrape.
func NewReportLimiter(s Settings) (*overload.Limiter, error) {
	l, err := overload.New(overload.Config{Name: "report", Observer: s.Observer})
	if err != nil {
		return nil, err
	}
	if obs, ok := s.Observer.(*promthrottle.Observer); ok {
		obs.Overload(l)
	}
	return l, nil
}

// Report is the handler of GET /api/report: it waits for one of its
// slots, works ReportWork in it, and answers 200 with a JSON body.
func Report() http.Handler {
	slots := make(chan struct{}, ReportSlots)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(ReportWork) // the work: a fixed cost per request
		<-slots
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"report":"ready"}`)
	})
}
