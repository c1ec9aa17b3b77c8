package adaptertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// ReplayedHeader marks a replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// InFlightType is the problem type of a Replay duplicate whose original is
// still running (409), KeyReusedType that of an idempotency key reused for
// another body (422).
const (
	InFlightType  = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonInFlight"
	KeyReusedType = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonKeyReused"
)

// ReplayConfig is the config of the suite's Replay: "orders", a minute's
// TTL.
func ReplayConfig() throttle.ReplayConfig {
	return throttle.ReplayConfig{Name: "orders", TTL: time.Minute}
}

// replayGuardOf returns the guard of a Replay configured by c on a fresh
// memory store.
func replayGuardOf(t testing.TB, c throttle.ReplayConfig) *guard.Guard {
	return guard.Replay(NewReplay(t, c))
}

// ReplayKey keys a request as the example services key POST /orders: the
// user, then its Idempotency-Key, or its body's hash without one.
func ReplayKey() keyfuncs.Func {
	return keyfuncs.Join(UserKey(), keyfuncs.IdempotencyKey(keyfuncs.BodyHash(1<<20)))
}

// Order posts body for user with an Idempotency-Key (none when key is "").
func Order(user, key, body string) *http.Request {
	r := SubmitBody(user, body)
	if key != "" {
		r.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	return r
}

// Orders is a handler that creates an order per run: 201 Created with
// Location /orders/{n}, a JSON body {"id":n}, and two headers a replay must
// not repeat (Set-Cookie and X-Run). Before it answers, it waits for Gate,
// when set.
type Orders struct {
	Runs atomic.Int32
	Gate chan struct{}
	// Entered, when set, gets a value when a run starts.
	Entered chan struct{}
}

// ServeHTTP places order number Runs (after the gate, if any) and answers
// 201 with it.
func (o *Orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := o.Runs.Add(1)
	if o.Entered != nil {
		o.Entered <- struct{}{}
	}
	if o.Gate != nil {
		<-o.Gate
	}
	_, _ = io.Copy(io.Discard, r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", fmt.Sprintf("/orders/%d", n))
	h.Set("Set-Cookie", "session=secret")
	h.Set("X-Run", fmt.Sprint(n))
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"id":%d}`+"\n", n)
}

// orderID returns the id of an order answer, checking its form.
func orderID(t testing.TB, rec *httptest.ResponseRecorder) int {
	t.Helper()
	Status(t, rec, http.StatusCreated)
	var body struct{ ID int }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "body %q", rec.Body.String())
	require.Equal(t, fmt.Sprintf("/orders/%d", body.ID), rec.Header().Get("Location"), "Location")
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"), "Content-Type")
	return body.ID
}

// checkReplayed checks that rec is a replay of order id.
func checkReplayed(t testing.TB, rec *httptest.ResponseRecorder, id int) {
	t.Helper()
	require.Equal(t, id, orderID(t, rec), "replayed order")
	h := rec.Header()
	require.Equal(t, "true", h.Get(ReplayedHeader), ReplayedHeader)
	require.Empty(t, h.Get("Set-Cookie"), "a replay repeats Set-Cookie")
	require.Empty(t, h.Get("X-Run"), "a replay repeats X-Run")
	require.NotEmpty(t, h.Get("Ratelimit-Policy"), "replay lacks the recorded RateLimit-Policy")
}

// testReplay: a duplicate after the first answer gets it again, marked, with
// only the recorded headers; another user, or another key, runs afresh.
func testReplay(t *testing.T, a Adapter) {
	o := &Orders{}
	h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), o)
	first := Serve(h, Order("alice", "k1", `{"item":"book"}`))
	id := orderID(t, first)
	require.Empty(t, first.Header().Get(ReplayedHeader), "the first answer is marked replayed")
	require.NotEmpty(t, first.Header().Get("Set-Cookie"), "the first answer lost its Set-Cookie")
	for range 3 {
		checkReplayed(t, Serve(h, Order("alice", "k1", `{"item":"book"}`)), id)
	}
	require.Equal(t, int32(1), o.Runs.Load(), "handler runs")
	require.NotEqual(t, id, orderID(t, Serve(h, Order("bob", "k1", `{"item":"book"}`))),
		"another user's request with the same key got alice's order")
	require.NotEqual(t, id, orderID(t, Serve(h, Order("alice", "k2", `{"item":"book"}`))),
		"a new key got the old key's order")
	// Without a key, the body is the key: the same body replays.
	id2 := orderID(t, Serve(h, Order("alice", "", `{"item":"pen"}`)))
	checkReplayed(t, Serve(h, Order("alice", "", `{"item":"pen"}`)), id2)
	require.Equal(t, int32(4), o.Runs.Load(), "handler runs")
}

// testReplayConcurrent: 50 identical requests at once, the handler held
// until all have arrived: one run, 50 answers with its id, 49 replays.
func testReplayConcurrent(t *testing.T, a Adapter) {
	const n = 50
	o := &Orders{Gate: make(chan struct{}), Entered: make(chan struct{}, n)}
	h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), o)
	answers := concurrently(n, func() *httptest.ResponseRecorder {
		return Serve(h, Order("alice", "k1", `{"item":"book"}`))
	}, func() {
		<-o.Entered
		// The others are now either waiting for the first or about to:
		// their wait (5 s by default) starts when they find the key held.
		time.Sleep(50 * time.Millisecond)
		close(o.Gate)
	})
	ids := map[int]int{}
	replayed := 0
	for _, rec := range answers {
		ids[orderID(t, rec)]++
		if rec.Header().Get(ReplayedHeader) == "true" {
			replayed++
		}
	}
	assert.Len(t, ids, 1, "order ids")
	assert.Equal(t, n-1, replayed, "replayed answers")
	assert.Equal(t, int32(1), o.Runs.Load(), "handler runs")
}

// concurrently runs fn n times at once, calls during once they started,
// and returns the answers.
func concurrently(n int, fn func() *httptest.ResponseRecorder, during func()) []*httptest.ResponseRecorder {
	answers := make([]*httptest.ResponseRecorder, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = fn()
		}()
	}
	during()
	wg.Wait()
	return answers
}

// testReplayAfterFailure: the first request fails while duplicates wait;
// exactly one of them runs the handler again and the others get its answer.
func testReplayAfterFailure(t *testing.T, a Adapter) {
	const dups = 10
	var runs atomic.Int32
	entered := make(chan struct{}, dups+1)
	gate := make(chan struct{})
	h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		entered <- struct{}{}
		if n == 1 {
			<-gate
			http.Error(w, "payment declined", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", n))
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":%d}`, n)
	}))
	firstDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { firstDone <- Serve(h, Order("alice", "k1", "{}")) }()
	<-entered
	answers := concurrently(dups, func() *httptest.ResponseRecorder {
		return Serve(h, Order("alice", "k1", "{}"))
	}, func() {
		time.Sleep(50 * time.Millisecond) // let the duplicates find the key held
		close(gate)
	})
	Status(t, <-firstDone, http.StatusBadGateway)
	ids := map[int]int{}
	replayed := 0
	for _, rec := range answers {
		ids[orderID(t, rec)]++
		if rec.Header().Get(ReplayedHeader) == "true" {
			replayed++
		}
	}
	assert.Equal(t, int32(2), runs.Load(), "handler runs")
	assert.Len(t, ids, 1, "order ids")
	assert.Equal(t, dups-1, replayed, "replayed answers")
}

// testReplayInFlight: with no wait, a duplicate of a request still running
// gets 409 with Retry-After 1 and the retention in its problem body; once
// the first answered, it is replayed.
func testReplayInFlight(t *testing.T, a Adapter) {
	c := ReplayConfig()
	c.Wait = -1
	o := &Orders{Gate: make(chan struct{}), Entered: make(chan struct{}, 1)}
	h := a.Wrap(replayGuardOf(t, c), ReplayKey(), o)
	firstDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { firstDone <- Serve(h, Order("alice", "k1", "{}")) }()
	<-o.Entered
	rec := Serve(h, Order("alice", "k1", "{}"))
	close(o.Gate)
	prob := CheckProblem(t, rec, http.StatusConflict, InFlightType)
	require.Equal(t, "1", rec.Header().Get("Retry-After"), "Retry-After")
	require.Equal(t, 60, prob.Retention, "retention-seconds")
	id := orderID(t, <-firstDone)
	checkReplayed(t, Serve(h, Order("alice", "k1", "{}")), id)
}

// testReplayKeyReused: the same Idempotency-Key with another body gets 422;
// the same body is replayed.
func testReplayKeyReused(t *testing.T, a Adapter) {
	o := &Orders{}
	h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), o)
	id := orderID(t, Serve(h, Order("alice", "k1", `{"amount":10}`)))
	rec := Serve(h, Order("alice", "k1", `{"amount":1000}`))
	prob := CheckProblem(t, rec, http.StatusUnprocessableEntity, KeyReusedType)
	require.Equal(t, 60, prob.Retention, "retention-seconds")
	checkReplayed(t, Serve(h, Order("alice", "k1", `{"amount":10}`)), id)
	require.Equal(t, int32(1), o.Runs.Load(), "handler runs")
}

// testReplayFailureReleases: a failed or panicking first request records
// nothing and frees the key: the retry runs.
func testReplayFailureReleases(t *testing.T, a Adapter) {
	var runs atomic.Int32
	h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch runs.Add(1) {
		case 1:
			http.Error(w, "invalid", http.StatusUnprocessableEntity)
		case 2:
			panic("handler bug")
		default:
			OK(w, http.StatusCreated)
		}
	}))
	Status(t, Serve(h, Order("alice", "k1", "{}")), http.StatusUnprocessableEntity)
	require.NotNil(t, ServePanic(h, Order("alice", "k1", "{}")), "the handler's panic did not propagate")
	rec := Serve(h, Order("alice", "k1", "{}"))
	Status(t, rec, http.StatusCreated)
	require.Empty(t, rec.Header().Get(ReplayedHeader), "the retry is a replay")
	require.Equal(t, int32(3), runs.Load(), "handler runs: a third run answers")
}

// testReplayNoBody: a handler that sets a status and headers but writes no
// body is replayed with both (gin and echo send such a header late).
func testReplayNoBody(t *testing.T, a Adapter) {
	var runs atomic.Int32
	h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Location", "/orders/7")
		w.WriteHeader(http.StatusSeeOther)
	}))
	for i := range 2 {
		rec := Serve(h, Order("alice", "k1", "{}"))
		Status(t, rec, http.StatusSeeOther)
		require.Equal(t, "/orders/7", rec.Header().Get("Location"), "answer %d: Location", i)
		require.Equal(t, i == 1, rec.Header().Get(ReplayedHeader) == "true", "answer %d: replayed", i)
	}
	require.Equal(t, int32(1), runs.Load(), "handler runs")
}

// testReplayUnrecordable: a response too large to record, or flushed, is
// not replayed: its duplicates are told at once that the request was
// processed and its response not kept (409, ReasonNotKept) until the
// window ends, and the handler never runs again.
func testReplayUnrecordable(t *testing.T, a Adapter) {
	for _, c := range []struct {
		name  string
		write func(w http.ResponseWriter)
	}{
		{"TooLarge", func(w http.ResponseWriter) { _, _ = w.Write([]byte(strings.Repeat("x", 65<<10))) }},
		{"Flushed", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte("part"))
			_ = http.NewResponseController(w).Flush()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "Flushed" && a.Buffered {
				t.Skip("the framework buffers responses: nothing is streamed")
			}
			var runs atomic.Int32
			h := a.Wrap(replayGuardOf(t, ReplayConfig()), ReplayKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				c.write(w)
			}))
			Status(t, Serve(h, Order("alice", "k1", "{}")), http.StatusOK)
			rec := Serve(h, Order("alice", "k1", "{}"))
			CheckProblem(t, rec, http.StatusConflict, NotKeptType)
			RetryAfter(t, rec.Header())
			require.Equal(t, int32(1), runs.Load(), "handler runs")
		})
	}
}

// testReplayCustomReject: a replay is the answer the client asked for, not
// a rejection: it never goes through the application's rejection handler.
func testReplayCustomReject(t *testing.T, a Adapter) {
	o := &Orders{}
	h := a.WrapCustom(replayGuardOf(t, ReplayConfig()), ReplayKey(), o)
	id := orderID(t, Serve(h, Order("alice", "k1", "{}")))
	checkReplayed(t, Serve(h, Order("alice", "k1", "{}")), id)
}
