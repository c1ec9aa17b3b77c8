package demo

import (
	"net/http"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// ExportsInFlight is how many exports (POST /exports) one user may run at
// once: a third while two run gets 409.
const ExportsInFlight = 2

// NewExportsLock returns the lock of POST /exports, "exports": Exclusive
// with ExportsInFlight holders per user, each under a JobLease refreshed
// while its export works, so that a crashed process frees its place within
// seconds. It lives on the store of quotas (s.Quotas, or store when nil):
// Redlock offers no lock of several holders, so under Redlock the exports
// are counted on the first master.
func NewExportsLock(store store.Store, s Settings) (*throttle.Lock, error) {
	if s.Quotas != nil {
		store = s.Quotas
	}
	return throttle.NewLock(store, throttle.LockConfig{
		Name:    "exports",
		Mode:    throttle.Exclusive,
		Holders: ExportsInFlight,
		TTL:     JobLease,
		Options: s.Options(),
	})
}

// RunExport is the handler of POST /exports once the middleware admitted
// it: it works for -work, then answers 200 with a JSON body, as a job does.
func RunExport(s Settings, server string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		RunJob(w, r, s, server, "export")
	})
}
