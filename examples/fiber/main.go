// Command fiber is a fiber (v3) service whose POST /submit accepts one submission per
// user per window and answers the duplicates (double clicks, client and
// proxy retries) with 429 Too Many Requests, whose GET /search allows each
// user 10 searches a minute, and whose POST /jobs/:id/run runs one job per
// id at a time.
//
//	go run ./examples/fiber                          # in-memory store
//	go run ./examples/fiber -redis 127.0.0.1:6379    # locks shared through Redis
//	curl -i -X POST -H 'X-User-ID: 42' localhost:8080/submit
//	curl -i -X POST -H 'X-User-ID: 42' -d fail=1 localhost:8080/submit   # 422, and the key is freed
//	curl -i -H 'X-User-ID: 42' 'localhost:8080/search?q=gcra'
//	curl -i -X POST localhost:8080/jobs/report-7/run
//	curl -i -X POST -H 'X-User-ID: 42' -H 'Idempotency-Key: "k1"' -d item=book localhost:8080/orders   # twice: replayed
//	curl -s localhost:8080/metrics | grep throttle_requests_total
//
// In a browser, http://127.0.0.1:8080/ is an order form: double-click
// "Place order", or submit it from two tabs, and the second submission
// gets an "already submitted" page.
//
// Routes:
//
//	GET  /                An HTML order form posting to /submit; sets the demo_user
//	                      cookie (a random id: the user of this browser, in every tab).
//	POST /submit          Dedupe, policy "submit", keyed by X-User-ID, else the demo_user
//	                      cookie, else the client IP: 200 with a JSON body; a duplicate
//	                      within -window gets 429. With fail=1 (query or form field) the
//	                      handler fails with 422, which frees the key: the user may
//	                      submit again at once. A browser (Accept naming text/html) gets
//	                      each answer as an HTML page, the 429 as "already submitted,
//	                      try again in N s"; other clients get JSON or problem+json.
//	GET  /search?q=       Quota, policy "search": 10 per minute per user (keyed as
//	                      /submit), then 429.
//	POST /orders          Replay, policy "orders", keyed as /submit plus the Idempotency-Key
//	                      header (else the body's hash): works about 1 s, then 201 with
//	                      Location /orders/:id and the order as JSON (a browser: 303 to it);
//	                      a repeat gets the same answer with Idempotent-Replayed: true, the
//	                      same Idempotency-Key with another body 422.
//	GET  /orders/:id      The order (JSON, or a page for a browser); 404 if this process
//	                      did not place it.
//	GET  /checkout        An order form posting to /orders, with a hidden field unique to
//	                      each page load: a double click places one order.
//	POST /password-reset Cooldown, policy "reset", keyed as /submit: 202 with a JSON body;
//	                      another within a minute gets 429, whatever the first answered.
//	POST /jobs/:id/run    Exclusive, policy "jobs", keyed by the job id: works for -work,
//	                      then 200 with a JSON body; the same id meanwhile gets 409.
//	                      An empty id, or one over 64 bytes, gets 400.
//	GET  /api/items       Quota, policies "items-burst" (5 per 10 s) and "items-hourly" (30 per
//	                      hour), decided and charged as one, keyed as /submit; a user whose
//	                      id begins with pro- has four times both. Both in every RateLimit
//	                      field, most restrictive first; a refusal (429) is charged to neither.
//	POST /exports         Exclusive with two holders, policy "exports", keyed as /submit:
//	                      works for -work, then 200; a third while two run gets 409.
//	POST /admin/reset     With -admin-token TOKEN and Authorization: Bearer TOKEN: clears the
//	                      quotas and frees the keys of ?user=ID, 204; else 401. Without
//	                      -admin-token: 404. Never throttled.
//	GET  /healthz         200, never throttled.
//	GET  /metrics         Prometheus text format (package promthrottle), never throttled.
//
// Every route answers 405 to another method, and a path with an empty,
// "." or ".." segment gets 400.
// "." or ".." segment gets 400.
//
// Flags: -addr (default 127.0.0.1:8080); -redis (empty: in-memory store;
// one host:port: one Redis; several, comma-separated: Redlock over
// independent masters), -redis-cluster or -redis-sentinel master@host:port
// (other Redis set-ups), -replica-ack N; -window (default 5s), -work
// (default 2s), both positive (otherwise exit status 2); -fail open, closed
// or over (what a request gets while Redis fails); -admin-token (default
// empty: no POST /admin/reset). SIGINT or SIGTERM shuts
// it down cleanly (exit status 0).
//
// The fiber app is served by the net/http server the other examples use
// (fiber's adaptor.FiberApp), so that the four share flags, timeouts and
// shutdown; the throttle middleware is fiberadapter's, on fiber's own
// types, and the handlers the examples share run through
// internal/fiberhttp. The net/http, gin and echo examples build the same
// key for the same user and the same job id, so that all four share locks
// and quotas when pointed at one Redis.
package main

import (
	"net/http"
	"net/url"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/internal/fiberhttp"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/store"
)

func main() { demo.Main("fiber", routes) }

func routes(store store.Store, s demo.Settings) (http.Handler, error) {
	// Dedupe is the zero Mode: an accepted submission holds its key for the
	// window; a failed one (status >= 400) frees it so that the user can retry.
	submitLock, err := throttle.NewLock(store, throttle.LockConfig{
		Name: "submit",
		TTL:  s.Window,
		// -fail: what a request gets while Redis fails; the Observer is
		// counted in GET /metrics.
		Options: s.Options(),
	})
	if err != nil {
		return nil, err
	}
	// GET /search: a Quota of 10 requests per minute per user, whatever
	// -window says (see demo.SearchRate).
	search, err := demo.NewSearchQuota(store, s)
	if err != nil {
		return nil, err
	}
	// POST /jobs/:id/run: an Exclusive lock, one run per job id at a time
	// (see demo.JobsLock).
	jobs, err := demo.NewJobsLock(store, s)
	if err != nil {
		return nil, err
	}
	// POST /orders: a Replay, the repeats of an order get its first answer
	// (see demo.OrdersReplay).
	orders, err := demo.NewOrdersReplay(store, s)
	if err != nil {
		return nil, err
	}
	book := demo.NewOrderBook("fiber")
	// POST /password-reset: a Cooldown lock, one reset email per user per
	// minute whatever happens (see demo.ResetLock).
	reset, err := demo.NewResetLock(store, s)
	if err != nil {
		return nil, err
	}
	// GET /api/items: two rates decided as one, each user's plan's (see
	// demo.PlanRates): a request refused by either is charged to neither.
	items, err := demo.NewItemsQuota(store, s)
	if err != nil {
		return nil, err
	}
	// POST /exports: at most two exports in flight per user (see
	// demo.NewExportsLock).
	exports, err := demo.NewExportsLock(store, s)
	if err != nil {
		return nil, err
	}
	report, err := demo.NewReportLimiter(s)
	if err != nil {
		return nil, err
	}
	// Who is submitting or searching: the X-User-ID header; else the
	// demo_user cookie that GET / sets, since a browser's form cannot send
	// a header; else the peer's IP: keyfuncs' rules on the fiber.Ctx, so
	// the key is the same as in the net/http, gin and echo examples.
	key := keyfuncs.FirstOf(fiberadapter.Header("X-User-ID"), fiberadapter.Cookie(demo.UserCookie), fiberadapter.RemoteIP())
	// An order is keyed by its user, then its Idempotency-Key or else the
	// hash of its body (demo.OrderKey), read through keyfuncs on the
	// request converted (fiberadapter.Request).
	orderKey := keyfuncs.Join(key, fiberadapter.Request(demo.OrderRequest))
	// Which job: the :id route parameter, decoded as net/http's
	// r.PathValue gives it (see jobID) and checked (not empty, at most 64
	// bytes) by demo.JobKey.
	jobKey := demo.JobKey(jobID)
	// The rates of GET /api/items are a function of the flow.Call, whose
	// Request is the fiber.Ctx: guard's functions of an *http.Request do
	// not apply to fiber.
	itemsRates := func(call flow.Call) []throttle.Rate { return demo.PlanRates(userID(call.Request.(fiber.Ctx))) }

	app := fiber.New(fiber.Config{
		// Routes match as in net/http, gin and echo: case and trailing
		// slash count.
		CaseSensitive: true,
		StrictRouting: true,
	})
	app.Use(recover.New())
	// Each request runs with its net/http context, which ends when the
	// client leaves or the shutdown's grace is over (see contexts).
	var cs contexts
	app.Use(cs.receive)
	app.Get("/", fiberhttp.Handler(demo.FormPage(s, "fiber"))) // the order form
	// A browser gets a rejection as a page, other clients as problem+json.
	app.Post("/submit", fiberadapter.Middleware(guard.Lock(submitLock), key, fiberadapter.WithRejectHandler(rejectPage)),
		fiberhttp.Handler(http.HandlerFunc(submit)))
	app.Get("/search", fiberadapter.Middleware(guard.Quota(search, demo.SearchRate), key), searchHandler)
	app.Post("/orders", fiberadapter.Middleware(guard.Replay(orders), orderKey, fiberadapter.WithRejectHandler(rejectPage)),
		fiberhttp.Handler(http.HandlerFunc(book.Place)))
	app.Get("/orders/:id", func(c fiber.Ctx) error {
		id, err := url.PathUnescape(c.Params("id"))
		if err != nil {
			id = "" // no such order
		}
		return fiberhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { book.Show(w, r, id) }))(c)
	})
	app.Get("/checkout", fiberhttp.Handler(http.HandlerFunc(demo.Checkout))) // an order form to double-click
	app.Post("/password-reset", fiberadapter.Middleware(guard.Lock(reset), key), fiberhttp.Handler(http.HandlerFunc(demo.Reset)))
	app.Post("/jobs/:id/run", fiberadapter.Middleware(guard.Lock(jobs), jobKey), runJob(s))
	app.Get("/api/items", fiberadapter.Middleware(guard.Quota(items, itemsRates), key), fiberhttp.Handler(http.HandlerFunc(demo.Items)))
	app.Post("/exports", fiberadapter.Middleware(guard.Lock(exports), key), fiberhttp.Handler(demo.RunExport(s, "fiber")))
	// GET /api/report: overload protection for the whole process (any key).
	app.Get("/api/report", fiberadapter.Middleware(guard.Overload(report, nil), func(fiber.Ctx) (string, error) { return "all", nil }),
		fiberhttp.Handler(demo.Report()))
	// POST /admin/reset, with -admin-token only: never throttled. It
	// resets the identities keyfuncs gives, which are key's.
	userKey := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.Cookie(demo.UserCookie), keyfuncs.RemoteIP())
	if admin := demo.NewAdmin(s, userKey, search, items, submitLock, reset); admin != nil {
		app.Post("/admin/reset", fiberhttp.Handler(admin))
	}
	app.Get("/healthz", healthz)                      // no throttle middleware: never throttled
	app.Get("/metrics", fiberhttp.Handler(s.Metrics)) // likewise
	return cs.send(adaptor.FiberApp(app)), nil
}

func submit(w http.ResponseWriter, r *http.Request) {
	if demo.RejectSubmission(w, r, "fiber") { // fail=1: 422, which frees the key
		return
	}
	if demo.AcceptedPage(w, r, "fiber") { // a browser: an HTML page
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"server":"fiber","status":"accepted"}` + "\n"))
}

// rejectPage answers a rejected submission or order as demo.RejectPage
// does.
func rejectPage(c fiber.Ctx, rej *guard.Rejection) error {
	return fiberhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		demo.RejectPage(w, r, rej)
	}))(c)
}

func searchHandler(c fiber.Ctx) error {
	return fiberhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(demo.SearchJSON(r))
	}))(c)
}

// userID is demo.UserID on the fiber.Ctx: the X-User-ID header, else the
// demo_user cookie.
func userID(c fiber.Ctx) string {
	if id := c.Get("X-User-ID"); id != "" {
		return id
	}
	return c.Cookies(demo.UserCookie)
}

// jobID returns the :id of a job's route, decoded: fiber matches routes on
// the path as sent and leaves the parameter encoded, while net/http, gin
// and echo decode it, and so must this, for the four to build the same
// key for the same job.
func jobID(c fiber.Ctx) (string, error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil {
		return "", demo.BadJobID()
	}
	return id, nil
}

// runJob works for -work under the job's lease; c.Context(), which the
// middleware cancels if the lease is lost, stops it early.
func runJob(s demo.Settings) fiber.Handler {
	return func(c fiber.Ctx) error {
		id, err := jobID(c)
		if err != nil { // not reached: the key function refused it
			return err
		}
		return fiberhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			demo.RunJob(w, r, s, "fiber", id)
		}))(c)
	}
}

func healthz(c fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}
