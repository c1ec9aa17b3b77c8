// Command gin is a gin service whose POST /submit accepts one submission per
// user per window and answers the duplicates (double clicks, client and
// proxy retries) with 429 Too Many Requests, whose GET /search allows each
// user 10 searches a minute, and whose POST /jobs/:id/run runs one job per
// id at a time.
//
//	go run ./examples/gin                          # in-memory store
//	go run ./examples/gin -redis 127.0.0.1:6379    # locks shared through Redis
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
// The net/http and echo examples build the same key for the same user and
// the same job id, so that all three share locks and quotas when pointed at
// one Redis.
package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/store"
)

func main() { demo.Main("gin", routes) }

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
	book := demo.NewOrderBook("gin")
	// POST /password-reset: a Cooldown lock, one reset email per user per
	// minute whatever happens (see demo.ResetLock).
	reset, err := demo.NewResetLock(store, s)
	if err != nil {
		return nil, err
	}
	// GET /api/items: two rates decided as one, each user's plan's (see
	// demo.ItemsRates): a request refused by either is charged to neither.
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
	// a header; else the peer's IP. keyfuncs works on the *http.Request, so
	// the key is the same as in the net/http and echo examples.
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.Cookie(demo.UserCookie), keyfuncs.RemoteIP())
	// Which job: the :id route parameter, which keyfuncs cannot see, so the
	// key is built from the *gin.Context (ginadapter.Middleware) and
	// checked (not empty, at most 64 bytes) by demo.JobKey. It is the
	// decoded id, as net/http's r.PathValue gives it (see UseRawPath).
	jobKey := demo.JobKey(func(c *gin.Context) (string, error) { return c.Param("id"), nil })

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true // 405, not 404, for GET /submit or POST /search, like the other examples
	// Match routes on the path as sent and decode the parameters
	// (UnescapePathValues is on by default), as net/http's ServeMux does,
	// so that an id holding an encoded '/' (a%2Fb) is one id, "a/b", here
	// too rather than no route at all.
	r.UseRawPath = true
	r.Use(gin.Recovery())
	r.GET("/", gin.WrapH(demo.FormPage(s, "gin"))) // the order form
	// A browser gets a rejection as a page, other clients as problem+json.
	r.POST("/submit", ginadapter.Middleware(guard.Lock(submitLock), key, ginadapter.WithRejectHandler(rejectPage)), submit)
	r.GET("/search", ginadapter.Middleware(guard.Quota(search, demo.SearchRate), key), searchHandler)
	// An order is keyed by its user, then its Idempotency-Key or else the
	// hash of its body (demo.OrderKey).
	r.POST("/orders", ginadapter.Middleware(guard.Replay(orders), demo.OrderKey(key), ginadapter.WithRejectHandler(rejectPage)),
		gin.WrapF(book.Place))
	r.GET("/orders/:id", func(c *gin.Context) { book.Show(c.Writer, c.Request, c.Param("id")) })
	r.GET("/checkout", gin.WrapF(demo.Checkout)) // an order form to double-click
	r.POST("/password-reset", ginadapter.Middleware(guard.Lock(reset), key), gin.WrapF(demo.Reset))
	r.POST("/jobs/:id/run", ginadapter.Middleware(guard.Lock(jobs), jobKey), runJob(s))
	r.GET("/api/items", ginadapter.Middleware(guard.Quota(items, demo.ItemsRates), key), gin.WrapF(demo.Items))
	r.POST("/exports", ginadapter.Middleware(guard.Lock(exports), key), gin.WrapH(demo.RunExport(s, "gin")))
	// GET /api/report: overload protection for the whole process (any key).
	r.GET("/api/report", ginadapter.Middleware(guard.Overload(report, nil), keyfuncs.Static("all")), gin.WrapH(demo.Report()))
	// POST /admin/reset, with -admin-token only: never throttled.
	if admin := demo.NewAdmin(s, key, search, items, submitLock, reset); admin != nil {
		r.POST("/admin/reset", gin.WrapH(admin))
	}
	r.GET("/healthz", healthz)              // no throttle middleware: never throttled
	r.GET("/metrics", gin.WrapH(s.Metrics)) // likewise
	return r, nil
}

func submit(c *gin.Context) {
	if demo.RejectSubmission(c.Writer, c.Request, "gin") { // fail=1: 422, which frees the key
		return
	}
	if demo.AcceptedPage(c.Writer, c.Request, "gin") { // a browser: an HTML page
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "accepted", "server": "gin"})
}

// rejectPage answers a rejected submission as demo.RejectPage does (the
// middleware aborts the chain after it).
func rejectPage(c *gin.Context, rej *guard.Rejection) {
	demo.RejectPage(c.Writer, c.Request, rej)
}

func searchHandler(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", demo.SearchJSON(c.Request))
}

// runJob works for -work under the job's lease; c.Request's context, which
// the middleware cancels if the lease is lost, stops it early.
func runJob(s demo.Settings) gin.HandlerFunc {
	return func(c *gin.Context) {
		demo.RunJob(c.Writer, c.Request, s, "gin", c.Param("id"))
	}
}

func healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}
