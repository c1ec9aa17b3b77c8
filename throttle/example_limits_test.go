package throttle_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// Two limits on one route, decided as one, with the limits of the user's
// plan: a request refused by the burst limit is not charged to the hourly
// one, and every answer lists both, most restrictive first.
func ExampleQuota_AllowAll() {
	items, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "items"})
	if err != nil {
		panic(err)
	}
	burst := throttle.Rate{Name: "items-burst", Limit: 2, Window: 10 * time.Second}
	hourly := throttle.Rate{Name: "items-hourly", Limit: 30, Window: time.Hour}
	plan := func(r *http.Request, _ string) []throttle.Rate {
		if strings.HasPrefix(r.Header.Get("X-User-ID"), "pro-") {
			return []throttle.Rate{{Name: burst.Name, Limit: 8, Window: burst.Window}, {Name: hourly.Name, Limit: 120, Window: hourly.Window}}
		}
		return []throttle.Rate{burst, hourly}
	}
	h := nethttp.Middleware(guard.Quota(items, plan), keyfuncs.Header("X-User-ID"))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, user := range []string{"ann", "ann", "ann", "pro-bo"} {
		req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		req.Header.Set("X-User-ID", user)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(user, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Outside HTTP: the third request was charged to neither rate.
	ds, err := items.AllowAll(context.Background(), "ann", []throttle.Rate{burst, hourly}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("hourly left:", ds[1].Remaining)
	// Output:
	// ann 200 "items-burst";q=2;w=10, "items-hourly";q=30;w=3600
	// ann 200 "items-burst";q=2;w=10, "items-hourly";q=30;w=3600
	// ann 429 "items-burst";q=2;w=10, "items-hourly";q=30;w=3600
	// pro-bo 200 "items-burst";q=8;w=10, "items-hourly";q=120;w=3600
	// hourly left: 28
}

// At most two exports per user at once: each holds one of the key's two
// places while it runs; a third is refused until one returns.
func ExampleLockConfig_holders() {
	exports, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "exports", Mode: throttle.Exclusive, Holders: 2})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, _ := exports.Acquire(ctx, "user-42")
	second, _ := exports.Acquire(ctx, "user-42")
	_, err = exports.Acquire(ctx, "user-42")
	fmt.Println("third:", err != nil)
	_ = first.Release(ctx)
	third, err := exports.Acquire(ctx, "user-42")
	fmt.Println("after a release:", err == nil)
	_ = second.Release(ctx)
	_ = third.Release(ctx)
	// Output:
	// third: true
	// after a release: true
}

// An operator's reset: the user's quota is full again, and a key held for
// the user is free at once (its holder finds its lease lost).
func ExampleQuota_Reset() {
	st := memstore.New()
	search, _ := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	submit, _ := throttle.NewLock(st, throttle.LockConfig{Name: "submit"})
	ctx := context.Background()
	perMinute := throttle.Rate{Limit: 2, Window: time.Minute}
	for range 3 {
		_, _ = search.Allow(ctx, "user-42", perMinute, 1)
	}
	lease, _ := submit.Acquire(ctx, "user-42")

	_ = search.Reset(ctx, "user-42")
	_ = submit.Reset(ctx, "user-42")

	d, _ := search.Allow(ctx, "user-42", perMinute, 0)
	_, err := submit.Acquire(ctx, "user-42")
	fmt.Println("searches left:", d.Remaining, "submit free:", err == nil, "old lease:", lease.Release(ctx))
	// Output:
	// searches left: 2 submit free: true old lease: throttle: lease not held
}
