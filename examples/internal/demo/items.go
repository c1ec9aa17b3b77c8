package demo

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// The two rates of GET /api/items, decided and charged as one: a burst
// limit and an hourly one, both listed in every answer's RateLimit fields.
// A user whose id begins with ProPrefix has ProFactor times both.
var (
	ItemsBurst  = throttle.Rate{Name: "items-burst", Limit: 5, Window: 10 * time.Second}
	ItemsHourly = throttle.Rate{Name: "items-hourly", Limit: 30, Window: time.Hour}
)

// ProPrefix starts the id of a user of the pro plan; ProFactor is how many
// times the free plan's requests that user may make.
const (
	ProPrefix = "pro-"
	ProFactor = 4
)

var (
	freeItems = []throttle.Rate{ItemsBurst, ItemsHourly}
	proItems  = []throttle.Rate{times(ItemsBurst, ProFactor), times(ItemsHourly, ProFactor)}
)

func times(r throttle.Rate, n int) throttle.Rate {
	r.Limit *= n
	return r
}

// ItemsRates returns the rates of a GET /api/items request: the pro plan's
// for a user whose id (UserID) begins with ProPrefix, else the free plan's.
// guard.Quota calls it for each request.
func ItemsRates(r *http.Request, _ string) []throttle.Rate { return PlanRates(UserID(r)) }

// PlanRates returns the rates of GET /api/items for the user id (UserID):
// the pro plan's for an id that begins with ProPrefix, else the free
// plan's.
func PlanRates(id string) []throttle.Rate {
	if strings.HasPrefix(id, ProPrefix) {
		return proItems
	}
	return freeItems
}

// UserID returns the user a request names, as the examples' key reads it:
// the X-User-ID header, else the demo_user cookie; "" for neither.
func UserID(r *http.Request) string {
	if id := r.Header.Get("X-User-ID"); id != "" {
		return id
	}
	if c, err := r.Cookie(UserCookie); err == nil {
		return c.Value
	}
	return ""
}

// NewItemsQuota returns the Quota of GET /api/items, "items", on the store
// of quotas (s.Quotas, or store when nil). While Redis fails it does what
// -fail says, as /search does.
func NewItemsQuota(store store.Store, s Settings) (*throttle.Quota, error) {
	if s.Quotas != nil {
		store = s.Quotas
	}
	return throttle.NewQuota(store, throttle.QuotaConfig{Name: "items", Options: s.Options()})
}

// ItemsJSON is the body of an admitted GET /api/items.
var ItemsJSON = []byte(`{"items":[{"id":1,"name":"book"},{"id":2,"name":"pen"}]}` + "\n")

// Items is the handler of GET /api/items once the middleware admitted it.
func Items(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(ItemsJSON)
}
