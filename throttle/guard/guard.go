package guard

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/overload"
)

// Guard is one limiter's request handling over HTTP, made by Lock, Quota
// or Replay when a middleware is built: a flow.Job, which decides, and how
// its answers look over HTTP. It is safe for concurrent use.
type Guard struct {
	job     *flow.Job
	name    string
	mode    throttle.Mode
	window  time.Duration // a lock's or Replay's TTL
	holders int
	status  int // of a request turned away for its key or quota
	failed  func(status int) bool
	legacy  bool // LegacyHeaders
	// onlyFailures: CountOnlyFailures, for a Quota.
	onlyFailures bool
	flowOpts     []flow.Option

	// A duplicate's problem body, built once: for its detail and its one
	// violated policy.
	contendedDetail, violated string
	contendedBody             []byte
}

// Option configures a Guard.
type Option func(*Guard)

// WithStatus sets the status, a 4xx or 5xx, of a request whose key is held
// or quota spent: by default 429, or 409 for an Exclusive lock.
func WithStatus(status int) Option {
	return func(g *Guard) {
		if status >= 400 && status <= 599 {
			g.status = status
		}
	}
}

// WithFailed tells a failed request from the handler's status, for Dedupe
// and Replay (which release a failed request's key) and CountOnlyFailures.
// Default: status >= 400.
func WithFailed(failed func(status int) bool) Option {
	return func(g *Guard) {
		if failed != nil {
			g.failed = failed
		}
	}
}

// CountOnlyFailures makes a Quota charge only failed requests (see
// WithFailed), such as wrong passwords: flow.CountOnlyFailures.
func CountOnlyFailures() Option {
	return func(g *Guard) { g.onlyFailures, g.flowOpts = true, append(g.flowOpts, flow.CountOnlyFailures()) }
}

// WithCost makes a Quota charge each request what f says instead of 1 (the
// bytes of an upload): a cost above Burst gets 413, a negative one 400, an
// error of f 400 or the 4xx status it carries.
func WithCost(f func(r *http.Request) (int, error)) Option {
	return func(g *Guard) {
		if f != nil {
			g.flowOpts = append(g.flowOpts, flow.WithCost(func(c flow.Call) (int, error) { return f(request(c)) }))
		}
	}
}

// Skip lets the requests for which skip returns true through unguarded, in
// every adapter, before anything else the guard does (the adapter has built
// the key already), as flow.Skip does: for allow-lists, health checks and
// internal callers on a guarded route. nil skips nothing.
func Skip(skip func(r *http.Request) bool) Option {
	return func(g *Guard) {
		if skip != nil {
			g.flowOpts = append(g.flowOpts, flow.Skip(func(c flow.Call) bool { return skip(request(c)) }))
		}
	}
}

// WithFlow adds options to the guard's flow.Job: flow.Skip or flow.WithCost
// of a flow.Call, for an adapter whose requests are not *http.Request.
func WithFlow(opts ...flow.Option) Option {
	return func(g *Guard) { g.flowOpts = append(g.flowOpts, opts...) }
}

// request is the *http.Request Serve put in c.
func request(c flow.Call) *http.Request {
	r, ok := c.Request.(*http.Request)
	if !ok {
		panic(fmt.Sprintf("guard: Skip, WithCost, Overload's priority and a Quota's rates of an *http.Request "+
			"need an adapter on net/http's types; this request is a %T: give functions of the flow.Call instead "+
			"(guard.WithFlow, a rate function of the flow.Call)", c.Request))
	}
	return r
}

// Lock returns the Guard of l: each request holds its key as l's Mode says.
// It panics when l is nil.
func Lock(l *throttle.Lock, opts ...Option) *Guard {
	if l == nil {
		panic("guard: Lock needs a non-nil *throttle.Lock")
	}
	c := l.Config()
	g := newGuard(c.Name, c.Mode, c.TTL, c.Holders, opts)
	return g.init(flow.Lock(l, g.flowOpts...), c.Name)
}

// Replay returns the Guard of r: a key's first successful response is
// recorded and its duplicates get it again; a duplicate with another body
// (an Idempotency-Key reused for another body) gets 422. It panics when r is nil.
func Replay(r *throttle.Replay, opts ...Option) *Guard {
	if r == nil {
		panic("guard: Replay needs a non-nil *throttle.Replay")
	}
	c := r.Config()
	g := newGuard(c.Name, throttle.ModeReplay, c.TTL, 1, opts)
	return g.init(flow.Replay(r, g.flowOpts...), c.Name)
}

// Overload returns the Guard of l: a request waits for one of l's permits
// (overload is per process: the key is not used), and one that l sheds
// gets 503 with Retry-After. priority, when not nil, says how a request
// fares (a health check never shed, background work shed first). It
// panics when l is nil.
func Overload(l *overload.Limiter, priority func(r *http.Request) overload.Priority, opts ...Option) *Guard {
	if l == nil {
		panic("guard: Overload needs a non-nil *overload.Limiter")
	}
	g := newGuard(l.Name(), throttle.ModeOverload, 0, 1, opts)
	var prio func(flow.Call) overload.Priority
	if priority != nil {
		prio = func(c flow.Call) overload.Priority { return priority(request(c)) }
	}
	return g.init(flow.Overload(l, prio, g.flowOpts...), l.Name())
}

// Rates are what a Quota guard decides a request under: one rate, several
// rates decided as one (10 a second and 1,000 a day: a request refused by
// either is charged to neither), or a function of the request and its key
// that returns them (a plan's or a tier's limits); for an adapter whose
// requests are not *http.Request, a function of the flow.Call. Give each
// of several rates its own Name: the RateLimit fields list them by it,
// most restrictive first.
type Rates interface {
	throttle.Rate | []throttle.Rate | func(flow.Call) throttle.Rate | func(flow.Call) []throttle.Rate |
		func(r *http.Request, id string) throttle.Rate | func(r *http.Request, id string) []throttle.Rate
}

// Quota returns the Guard of q under rates, each Burst defaulting to Limit.
// It panics when q or a rate function is nil or a fixed rate is not
// usable; a function's rate that is not usable answers its request 500.
func Quota[R Rates](q *throttle.Quota, rates R, opts ...Option) *Guard {
	if q == nil {
		panic("guard: Quota needs a non-nil *throttle.Quota")
	}
	name := q.Config().Name
	g, violated := newGuard(name, throttle.ModeQuota, 0, 1, opts), name
	var job *flow.Job
	switch v := any(rates).(type) {
	case throttle.Rate:
		job, violated = flow.Quota(q, v, g.flowOpts...), cmp.Or(v.Name, name)
	case []throttle.Rate:
		job = flow.Quota(q, v, g.flowOpts...)
		if len(v) > 0 {
			violated = cmp.Or(v[0].Name, name)
		}
	case func(*http.Request, string) throttle.Rate:
		job = flow.Quota(q, ofCall(v), g.flowOpts...)
	case func(*http.Request, string) []throttle.Rate:
		job = flow.Quota(q, ofCall(v), g.flowOpts...)
	case func(flow.Call) throttle.Rate:
		job = flow.Quota(q, v, g.flowOpts...)
	case func(flow.Call) []throttle.Rate:
		job = flow.Quota(q, v, g.flowOpts...)
	}
	return g.init(job, violated)
}

// ofCall is the rate function f of the request and key as flow takes it.
func ofCall[T any](f func(*http.Request, string) T) func(flow.Call) T {
	if f == nil {
		return nil
	}
	return func(c flow.Call) T { return f(request(c), c.ID) }
}

func newGuard(name string, mode throttle.Mode, window time.Duration, holders int, opts []Option) *Guard {
	g := &Guard{name: name, mode: mode, window: window, holders: max(holders, 1), status: http.StatusTooManyRequests,
		failed: func(status int) bool { return status >= 400 }}
	if mode == throttle.Exclusive {
		g.status = http.StatusConflict
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

func (g *Guard) init(job *flow.Job, violated string) *Guard {
	g.job, g.flowOpts, g.violated = job, nil, violated
	g.onlyFailures = g.onlyFailures && g.mode == throttle.ModeQuota
	g.contendedDetail = g.contended()
	rej := Rejection{Refusal: flow.Refusal{Reason: ReasonContended}, Status: g.status, Detail: g.contendedDetail, g: g}
	g.contendedBody = rej.buildBody([]string{violated})
	return g
}

// Job is the guard's flow.Job: what an adapter for a transport without
// net/http's types (fasthttp) serves requests with, answering with Admit,
// Outcome and Rejection as Serve does.
func (g *Guard) Job() *flow.Job { return g.job }

// Serve decides the request r for an adapter on net/http's types (w may
// wrap the framework's writer). c holds the identity the adapter's key
// function built, or its error, and the route template the router matched
// ("" when none): r.Pattern ("POST /orders/{id}", of which the path is
// kept) or gin's c.FullPath(). A Replay scopes its stored keys by method
// and route ("" stands for r.URL.Path) so that one Replay on two routes
// never answers one route's request with the other's response; Locks and
// Quotas store the identity alone. Serve fills in the rest of c.
//
// A request that goes ahead gets its RateLimit fields on w, and next runs
// the rest of the chain with r (carrying the context the hold needs) and
// returns the client's status, 200 when nothing was written. For a Replay
// key's first request c is not nil: next feeds it the response as it is
// sent, or once the chain returned if the framework buffers. The hold ends
// when next returns or panics (the panic keeps unwinding).
//
// A request turned away never reaches next: Serve returns false and fills
// *rej, the adapter's, which stops its chain and answers rej with
// rej.Write, or, after rej.SetHeader, with its own rejection handler; a
// Replay duplicate (ReasonReplayed) always with rej.Write, the recorded
// response.
func (g *Guard) Serve(w http.ResponseWriter, r *http.Request, c flow.Call, rej *Rejection,
	next func(r *http.Request, c *Capture) (status int)) bool {
	c.Request = r
	if g.mode == throttle.ModeReplay {
		g.scope(&c, r.Method, r.URL.Path)
		if c.Err == nil {
			c.Fingerprint, c.Err = idempotencyFingerprint(r)
		}
	}
	h := w.Header()
	if g.job.Serve(r.Context(), c, &rej.Refusal, func(p flow.Permit) flow.Outcome {
		capture := g.Admit(h, &p)
		if ctx := p.Context(); ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		status := next(r, capture)
		capture.WriteHeader(h, status) // nothing was sent: the header goes out now
		return g.Outcome(status, capture)
	}) {
		return true
	}
	g.reject(rej)
	return false
}

// Scope completes c as Serve does, for an adapter whose requests are not
// *http.Request (fasthttp): a Replay scopes its stored keys by method and
// route (path when c.Route is ""), and, for a request with an
// Idempotency-Key field (keyed reports it, with the body), fingerprints
// body, so that a key reused for another body gets 422, and a body over
// 1 MiB 413. Other guards leave c as it is, and never call keyed: the
// field is looked up only where it matters.
func (g *Guard) Scope(c *flow.Call, method, path string, keyed func() (body []byte, ok bool)) {
	if g.mode != throttle.ModeReplay {
		return
	}
	g.scope(c, method, path)
	if body, ok := keyed(); c.Err == nil && ok {
		c.Fingerprint, c.Err = hashBody(&http.Request{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))})
	}
}

func (g *Guard) scope(c *flow.Call, method, path string) {
	c.Method, c.Route = cmp.Or(method, http.MethodGet), cmp.Or(routePath(c.Route), path)
}

// Admit sets on h the RateLimit fields of a request p lets go ahead, and
// returns the capture of its response when p records it (a Replay key's
// first request), else nil.
func (g *Guard) Admit(h map[string][]string, p *flow.Permit) *Capture {
	g.setLimits(h, p.Limits())
	if p.Records() {
		return new(Capture)
	}
	return nil
}

// Outcome is the flow.Outcome of a request answered with status, whose
// response c captured.
func (g *Guard) Outcome(status int, c *Capture) flow.Outcome {
	return flow.Outcome{Failed: g.failed(status), Answer: c.answer()}
}
