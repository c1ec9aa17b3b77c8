package adaptertest

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// CostHeader carries a request's cost in the suite's cost tests; the
// value "too-large" makes the cost function fail with a 413 error.
const CostHeader = "X-Cost"

// StatusHeader tells statusHandler which status to answer with; the value
// "panic" makes it panic.
const StatusHeader = "X-Status"

// CostFromHeader is the cost function of the suite's cost tests: the
// integer in CostHeader, 1 when it is absent, an error when it is not an
// integer.
func CostFromHeader(r *http.Request) (int, error) {
	v := r.Header.Get(CostHeader)
	if v == "" {
		return 1, nil
	}
	return strconv.Atoi(v)
}

// WithHeader sets the header name of r to v and returns r.
func WithHeader(r *http.Request, name, v string) *http.Request {
	r.Header.Set(name, v)
	return r
}

// costly returns a Submit request from user with cost in CostHeader.
func costly(user string, cost int) *http.Request {
	return WithHeader(Submit(user), CostHeader, strconv.Itoa(cost))
}

// statusHandler counts its calls and answers with the status StatusHeader
// names (200 when it names none), or panics when it says "panic".
type statusHandler struct{ calls atomic.Int32 }

// handlerPanic is what statusHandler panics with.
var handlerPanic = &panicValue{401}

func (s *statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	v := r.Header.Get(StatusHeader)
	if v == "panic" {
		panic(handlerPanic)
	}
	status := http.StatusOK
	if v != "" {
		status, _ = strconv.Atoi(v)
	}
	OK(w, status)
}

// checkViolated fails the test unless the problem names exactly the policy
// name as violated.
func checkViolated(t testing.TB, p Problem, name string) {
	t.Helper()
	if !slices.Equal(p.ViolatedPolicies, []string{name}) {
		t.Fatalf("violated-policies %q, want [%q]", p.ViolatedPolicies, name)
	}
}

// noRetryAfter fails the test when h has a Retry-After.
func noRetryAfter(t testing.TB, h http.Header) {
	t.Helper()
	if v := h.Values("Retry-After"); len(v) != 0 {
		t.Fatalf("Retry-After %q, want none", v)
	}
}

// untouched fails the test when l decided anything in its store.
func untouched(t testing.TB, l *throttle.Limiter) {
	t.Helper()
	if s := l.Stats(); s.Acquired != 0 || s.Rejected != 0 {
		t.Fatalf("the store was asked: %d admitted, %d rejected", s.Acquired, s.Rejected)
	}
}

// testAdmittedFields checks the RateLimit fields of an admitted request
// holding its key: nothing more is available to it (r=0), for the window
// in Dedupe and Cooldown, for as long as the work runs (no t) in
// Exclusive.
func testAdmittedFields(t *testing.T, a Adapter) {
	for _, c := range []struct {
		name   string
		p      throttle.Policy
		policy Field
		t      int64 // 0: no t
	}{
		{"dedupe", throttle.Policy{Name: "submit"}, WindowPolicy("submit", 1, 5), 5},
		{"cooldown", throttle.Policy{Name: "report", Mode: throttle.Cooldown, Window: 3 * time.Second},
			WindowPolicy("report", 1, 3), 3},
		{"exclusive", throttle.Policy{Name: "job", Mode: throttle.Exclusive}, ConcurrencyPolicy("job"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := a.Wrap(NewLimiter(t, c.p), UserKey(), &counter{})
			rec := Serve(h, Submit("u1"))
			Status(t, rec, http.StatusCreated)
			CheckPolicy(t, rec.Header(), c.policy)
			if c.t > 0 {
				CheckLimit(t, rec.Header(), c.p.Name, 0, c.t, c.t)
			} else {
				CheckLimitNoT(t, rec.Header(), c.p.Name, 0)
			}
			noRetryAfter(t, rec.Header())
		})
	}
}

// search is the suite's Quota policy: 3 requests a minute, one refilled
// every 20 s.
func search() throttle.Policy {
	return throttle.Policy{Name: "search", Mode: throttle.Quota, Limit: 3, Window: time.Minute}
}

func testQuota(t *testing.T, a Adapter) {
	l := NewLimiter(t, search())
	c := &statusHandler{}
	h := a.Wrap(l, UserKey(), c)
	for _, r := range []int64{2, 1, 0} {
		rec := Serve(h, Submit("u1"))
		Status(t, rec, http.StatusOK)
		CheckPolicy(t, rec.Header(), WindowPolicy("search", 3, 60))
		// t: until one more request refills, at most the 20 s interval.
		CheckLimit(t, rec.Header(), "search", r, 1, 20)
		noRetryAfter(t, rec.Header())
	}
	rec := Serve(h, Submit("u1"))
	p := CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, "u1", StoredKey(l, "u1"))
	checkViolated(t, p, "search")
	CheckPolicy(t, rec.Header(), WindowPolicy("search", 3, 60))
	if ra := CheckRejectedLimit(t, rec.Header(), "search", 0); ra > 20 {
		t.Fatalf("Retry-After %d, more than the 20 s in which one request refills", ra)
	}
	if n := c.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3", n)
	}
	// Another user has a quota of their own.
	rec = Serve(h, Submit("u2"))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "search", 2, 1, 20)
}

// testQuotaBurst checks that a Burst other than Limit is admitted and said
// in throttle-burst, and that one equal to Limit is not said.
func testQuotaBurst(t *testing.T, a Adapter) {
	for _, burst := range []int{5, 1, 3} {
		t.Run("burst "+strconv.Itoa(burst), func(t *testing.T) {
			p := search()
			p.Burst = burst
			c := &statusHandler{}
			h := a.Wrap(NewLimiter(t, p), UserKey(), c)
			want := WindowPolicy("search", 3, 60)
			if burst != p.Limit {
				want.Burst = int64(burst)
			}
			for r := burst - 1; r >= 0; r-- {
				rec := Serve(h, Submit("u1"))
				Status(t, rec, http.StatusOK)
				CheckPolicy(t, rec.Header(), want)
				CheckLimit(t, rec.Header(), "search", int64(r), 1, 20)
			}
			rec := Serve(h, Submit("u1"))
			CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
			CheckPolicy(t, rec.Header(), want)
			CheckRejectedLimit(t, rec.Header(), "search", 0)
			if n := c.calls.Load(); n != int32(burst) {
				t.Fatalf("handler ran %d times, want %d", n, burst)
			}
		})
	}
}

func testQuotaKeyError(t *testing.T, a Adapter) {
	l := NewLimiter(t, search())
	c := &statusHandler{}
	rec := Serve(a.Wrap(l, UserKey(), c), Submit(""))
	CheckProblem(t, rec, http.StatusBadRequest, BadKeyType)
	CheckPolicy(t, rec.Header(), WindowPolicy("search", 3, 60))
	NoLimit(t, rec.Header())
	noRetryAfter(t, rec.Header())
	if n := c.calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times", n)
	}
	untouched(t, l)
}

// batch is the suite's Quota policy for costs: 10 a minute, one refilled
// every 6 s.
func batch() throttle.Policy {
	return throttle.Policy{Name: "batch", Mode: throttle.Quota, Limit: 10, Window: time.Minute}
}

// needCost skips the test for an adapter without a cost option.
func needCost(t *testing.T, a Adapter) {
	t.Helper()
	if a.WrapCost == nil {
		t.Skipf("adapter %s has no cost option", a.Name)
	}
}

func testCostCharged(t *testing.T, a Adapter) {
	needCost(t, a)
	l := NewLimiter(t, batch())
	c := &statusHandler{}
	h := a.WrapCost(l, UserKey(), CostFromHeader, c)

	rec := Serve(h, costly("u1", 4))
	Status(t, rec, http.StatusOK)
	CheckPolicy(t, rec.Header(), WindowPolicy("batch", 10, 60))
	CheckLimit(t, rec.Header(), "batch", 6, 1, 6)

	// A cost above what remains is turned away and charges nothing; the
	// RateLimit field says what remains, until when, and Retry-After when
	// the whole cost fits, later.
	rec = Serve(h, costly("u1", 8))
	checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded), "batch")
	ra := RetryAfter(t, rec.Header())
	if f := CheckLimit(t, rec.Header(), "batch", 6, 1, 6); int64(ra) <= f.T {
		t.Fatalf("Retry-After %d for a cost of 8 with 6 left, want more than t=%d", ra, f.T)
	}

	rec = Serve(h, costly("u1", 6))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "batch", 0, 1, 6)

	rec = Serve(h, costly("u1", 1))
	checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded), "batch")
	if ra := CheckRejectedLimit(t, rec.Header(), "batch", 0); ra > 6 {
		t.Fatalf("Retry-After %d, more than the 6 s in which one request refills", ra)
	}
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
	// Another user's quota is whole.
	rec = Serve(h, costly("u2", 10))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "batch", 0, 1, 6)
}

// testCostAboveBurst checks that a cost no wait would let through is 413,
// charges nothing and never reaches the handler, and that the bound is
// Burst, not Limit.
func testCostAboveBurst(t *testing.T, a Adapter) {
	needCost(t, a)
	for _, burst := range []int{10, 12} {
		t.Run("burst "+strconv.Itoa(burst), func(t *testing.T) {
			p := batch()
			p.Burst = burst
			l := NewLimiter(t, p)
			c := &statusHandler{}
			h := a.WrapCost(l, UserKey(), CostFromHeader, c)
			want := WindowPolicy("batch", 10, 60)
			if burst != p.Limit {
				want.Burst = int64(burst)
			}

			rec := Serve(h, costly("u1", burst+1))
			CheckProblem(t, rec, http.StatusRequestEntityTooLarge, "about:blank", "u1", StoredKey(l, "u1"))
			CheckPolicy(t, rec.Header(), want)
			NoLimit(t, rec.Header())
			noRetryAfter(t, rec.Header())
			if n := c.calls.Load(); n != 0 {
				t.Fatalf("handler ran %d times", n)
			}
			untouched(t, l)

			// The quota is whole: the most it allows fits at once.
			rec = Serve(h, costly("u1", burst))
			Status(t, rec, http.StatusOK)
			CheckLimit(t, rec.Header(), "batch", 0, 1, 6)
		})
	}
}

// testCostInvalid checks that a cost that cannot be worked out (the cost
// function fails, or says a negative cost) is the client's fault, answered
// like a bad key, before the store is asked.
func testCostInvalid(t *testing.T, a Adapter) {
	needCost(t, a)
	for _, c := range []struct {
		cost   string
		status int
	}{
		{"many", http.StatusBadRequest}, // the cost function fails
		{"-1", http.StatusBadRequest},   // a negative cost
		{"-11", http.StatusBadRequest},  // a negative cost beyond Burst
		{"too-large", http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.cost, func(t *testing.T) {
			l := NewLimiter(t, batch())
			s := &statusHandler{}
			cost := func(r *http.Request) (int, error) {
				if r.Header.Get(CostHeader) == "too-large" {
					return 0, tooLarge
				}
				return CostFromHeader(r)
			}
			h := a.WrapCost(l, UserKey(), cost, s)
			rec := Serve(h, WithHeader(Submit("u1"), CostHeader, c.cost))
			CheckProblem(t, rec, c.status, "about:blank", "many", "strconv", "syntax", "cost function", "u1")
			CheckPolicy(t, rec.Header(), WindowPolicy("batch", 10, 60))
			NoLimit(t, rec.Header())
			noRetryAfter(t, rec.Header())
			if n := s.calls.Load(); n != 0 {
				t.Fatalf("handler ran %d times", n)
			}
			untouched(t, l)
		})
	}
}

// tooLarge is a cost function's error that asks for 413, as a body too long
// to count would.
var tooLarge = httpStatusError{http.StatusRequestEntityTooLarge, "cost function: body too long to count"}

type httpStatusError struct {
	status int
	msg    string
}

func (e httpStatusError) Error() string   { return e.msg }
func (e httpStatusError) HTTPStatus() int { return e.status }

// testCostOtherModes checks that a policy other than Quota ignores the
// cost, as WithCost says: a request holds its key or not.
func testCostOtherModes(t *testing.T, a Adapter) {
	needCost(t, a)
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	c := &statusHandler{}
	h := a.WrapCost(l, UserKey(), CostFromHeader, c)
	for _, user := range []string{"u1", "u2"} {
		cost := 11
		if user == "u2" {
			cost = -1
		}
		rec := Serve(h, costly(user, cost))
		Status(t, rec, http.StatusOK)
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		CheckLimit(t, rec.Header(), "submit", 0, 5, 5)
	}
	CheckProblem(t, Serve(h, costly("u1", 1)), http.StatusTooManyRequests, QuotaExceeded)
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
	// The cost function is not even asked: one that would fail does not
	// turn requests away.
	broken := a.WrapCost(l, UserKey(), func(*http.Request) (int, error) {
		t.Error("cost function called under a Dedupe policy")
		return 0, tooLarge
	}, c)
	Status(t, Serve(broken, Submit("u3")), http.StatusOK)
}

// testCostZero checks that a request of cost 0 is free but no way past a
// spent quota: it goes ahead while one of cost 1 would, and is refused
// with the quota's Retry-After once the quota is spent.
func testCostZero(t *testing.T, a Adapter) {
	needCost(t, a)
	l := NewLimiter(t, batch())
	s := &statusHandler{}
	h := a.WrapCost(l, UserKey(), CostFromHeader, s)
	rec := Serve(h, costly("u1", 0))
	Status(t, rec, http.StatusOK)
	CheckLimitNoT(t, rec.Header(), "batch", 10) // full: nothing to refill
	Status(t, Serve(h, costly("u1", 10)), http.StatusOK)
	rec = Serve(h, costly("u1", 0))
	CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
	CheckRejectedLimit(t, rec.Header(), "batch", 0)
	if n := s.calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

// login is the suite's login protection: 5 failed attempts a minute.
func login() throttle.Policy {
	return throttle.Policy{Name: "login", Mode: throttle.Quota, Limit: 5, Window: time.Minute, CountOnlyFailures: true}
}

// testOnlyFailuresConcurrent sends 50 wrong passwords at once. Every request
// is charged before its handler runs, so that requests in flight plus
// failures charged never exceed Burst: exactly 5 reach the handler, which
// holds them until all 50 are decided, and 45 are turned away.
func testOnlyFailuresConcurrent(t *testing.T, a Adapter) {
	const n, burst = 50, 5
	l := NewLimiter(t, login())
	var calls atomic.Int32
	entered := make(chan struct{}, n)
	release := make(chan struct{})
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		OK(w, http.StatusUnauthorized)
	}))

	answers := make(chan *httptest.ResponseRecorder, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers <- Serve(h, Submit("alice"))
		}()
	}
	close(start)

	// Every request is decided once it is in the handler or answered;
	// only the handlers' release can answer the others.
	var got []*httptest.ResponseRecorder
	inHandler := 0
	stuck := time.NewTimer(30 * time.Second) // a hang, not a timing
	defer stuck.Stop()
wait:
	for inHandler+len(got) < n {
		select {
		case <-entered:
			inHandler++
		case rec := <-answers:
			got = append(got, rec)
		case <-stuck.C:
			t.Errorf("after 30 s only %d of %d requests were decided (%d in the handler)", inHandler+len(got), n, inHandler)
			break wait
		}
	}
	close(release)
	wg.Wait()
	close(answers)
	for rec := range answers {
		got = append(got, rec)
	}

	var failed, refused []*httptest.ResponseRecorder
	for _, rec := range got {
		switch rec.Code {
		case http.StatusUnauthorized:
			failed = append(failed, rec)
		case http.StatusTooManyRequests:
			refused = append(refused, rec)
		default:
			t.Fatalf("status %d (body %q)", rec.Code, rec.Body.String())
		}
	}
	if c := calls.Load(); c != burst || len(failed) != burst || len(refused) != n-burst || inHandler != burst {
		t.Fatalf("handler ran %d times (%d at once), %d answers 401 and %d 429; want %d, %d and %d",
			c, inHandler, len(failed), len(refused), burst, burst, n-burst)
	}
	// Each admitted request was charged in turn: the first off a full
	// quota (r=4), the last leaving nothing (r=0). In between, r is at
	// most what an ideal clock gives: the memory store reads its clock
	// before it takes the shard lock, so a charge decided after another
	// may count from an instant before it and see one request less.
	var rs []int64
	for _, rec := range failed {
		rs = append(rs, LimitOf(t, rec.Header(), "login").R)
	}
	slices.SortFunc(rs, cmp.Compare)
	ok := rs[0] == 0 && rs[burst-1] == burst-1
	for i, r := range rs {
		ok = ok && r <= int64(i)
	}
	if !ok {
		t.Fatalf("RateLimit r of the admitted requests %v, want 0, at most 1, 2, 3, and 4", rs)
	}
	for _, rec := range refused {
		checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, "alice"), "login")
		CheckRejectedLimit(t, rec.Header(), "login", 0)
	}
	// The five failures kept their charges.
	CheckProblem(t, Serve(h, Submit("alice")), http.StatusTooManyRequests, QuotaExceeded)
	if c := calls.Load(); c != burst {
		t.Fatalf("handler ran %d times, want %d", c, burst)
	}
}

// testOnlyFailuresSuccesses checks that successes cost nothing and failures
// do.
func testOnlyFailuresSuccesses(t *testing.T, a Adapter) {
	l := NewLimiter(t, login())
	c := &statusHandler{}
	h := a.Wrap(l, UserKey(), c)
	for i := range 20 {
		rec := Serve(h, Submit("alice"))
		Status(t, rec, http.StatusOK)
		CheckPolicy(t, rec.Header(), WindowPolicy("login", 5, 60))
		// Charged while it ran, refunded after: every success starts
		// from a full quota.
		if f := LimitOf(t, rec.Header(), "login"); f.R != 4 {
			t.Fatalf("success %d: RateLimit r=%d, want 4 (the successes before it cost nothing)", i+1, f.R)
		}
	}
	for r := int64(4); r >= 0; r-- {
		rec := Serve(h, WithHeader(Submit("alice"), StatusHeader, "401"))
		Status(t, rec, http.StatusUnauthorized)
		CheckLimit(t, rec.Header(), "login", r, 1, 12)
	}
	// Five failures: even a request that would succeed is turned away.
	rec := Serve(h, Submit("alice"))
	checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, "alice"), "login")
	CheckRejectedLimit(t, rec.Header(), "login", 0)
	if n := c.calls.Load(); n != 25 {
		t.Fatalf("handler ran %d times, want 25", n)
	}
}

// testOnlyFailuresPanic checks that a panicking handler is a failure: it
// keeps its charge.
func testOnlyFailuresPanic(t *testing.T, a Adapter) {
	p := login()
	p.Limit = 2
	l := NewLimiter(t, p)
	c := &statusHandler{}
	h := a.Wrap(l, UserKey(), c)
	panicking := func() {
		t.Helper()
		if got := ServePanic(h, WithHeader(Submit("alice"), StatusHeader, "panic")); got != handlerPanic {
			t.Fatalf("panic value %v, want the handler's %v", got, handlerPanic)
		}
	}
	panicking()
	// One charge left: a success uses it while it runs, then gives it back.
	rec := Serve(h, Submit("alice"))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "login", 0, 1, 30)
	panicking()
	CheckProblem(t, Serve(h, Submit("alice")), http.StatusTooManyRequests, QuotaExceeded)
	if n := c.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3", n)
	}
}
