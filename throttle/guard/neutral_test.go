package guard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// fastReq is a request of an HTTP implementation without net/http's
// types, as fasthttp's is: what an adapter on Guard.Job reads.
type fastReq struct {
	user     string
	internal bool
	cost     int
}

// serveFast serves req as an adapter on Guard.Job does, the handler
// answering status with body, and returns the status, header and body
// the client gets.
func serveFast(g *guard.Guard, req fastReq, status int, body string) (int, map[string][]string, string) {
	h := map[string][]string{}
	c := flow.Call{ID: req.user, Route: "/orders", Method: "POST", Request: req}
	var ref flow.Refusal
	ok := g.Job().Serve(context.Background(), c, &ref, func(p flow.Permit) flow.Outcome {
		capture := g.Admit(h, &p)
		h["Content-Type"] = []string{"text/plain"}
		capture.WriteHeader(h, status)
		capture.Write([]byte(body))
		return g.Outcome(status, capture)
	})
	if ok {
		return status, h, body
	}
	rej := g.Rejection(ref)
	st, b := rej.Render(h)
	return st, h, string(b)
}

// TestGuardWithoutNetHTTP: a guard serves requests that are not
// *http.Request through Job, Admit, Outcome, Rejection and Render: its
// own Skip and cost through WithFlow, rates of the flow.Call, and a
// Replay's capture and replay.
func TestGuardWithoutNetHTTP(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "search"})
	require.NoError(t, err)
	g := guard.Quota(q, func(c flow.Call) throttle.Rate { return throttle.Rate{Limit: 3, Window: time.Minute} },
		guard.WithFlow(flow.Skip(func(c flow.Call) bool { return c.Request.(fastReq).internal }),
			flow.WithCost(func(c flow.Call) (int, error) { return c.Request.(fastReq).cost, nil })))
	status, h, _ := serveFast(g, fastReq{user: "u", cost: 2}, 200, "ok")
	assert.Equal(t, 200, status)
	assert.Equal(t, []string{`"search";q=3;w=60`}, h["Ratelimit-Policy"])
	assert.Equal(t, []string{`"search";r=1;t=20`}, h["Ratelimit"])
	status, h, body := serveFast(g, fastReq{user: "u", cost: 2}, 200, "ok")
	assert.Equal(t, 429, status)
	assert.Equal(t, []string{"application/problem+json"}, h["Content-Type"])
	assert.Contains(t, body, `"violated-policies":["search"]`)
	assert.Equal(t, []string{"20"}, h["Retry-After"])
	status, h, _ = serveFast(g, fastReq{user: "u", cost: 2, internal: true}, 200, "ok")
	assert.Equal(t, 200, status, "skipped")
	assert.Empty(t, h["Ratelimit"], "a skipped request's RateLimit")

	r, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	require.NoError(t, err)
	g = guard.Replay(r)
	status, _, _ = serveFast(g, fastReq{user: "u"}, 201, "order 1")
	require.Equal(t, 201, status)
	status, h, body = serveFast(g, fastReq{user: "u"}, 500, "must not run")
	assert.Equal(t, 201, status, "a replay")
	assert.Equal(t, "order 1", body)
	assert.Equal(t, []string{"true"}, h["Idempotent-Replayed"])
	assert.Equal(t, []string{"text/plain"}, h["Content-Type"])
	assert.Equal(t, []string{strconv.Itoa(len("order 1"))}, h["Content-Length"])
}

// TestScope: Scope completes a Replay's call as Serve does, so that a
// request served through Job (fasthttp) finds the record a request through
// Serve (net/http) left under the same key, and a reused Idempotency-Key
// with another body gets 422 in either; other guards leave the call alone.
func TestScope(t *testing.T) {
	r, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	require.NoError(t, err)
	g := guard.Replay(r)
	serveHTTP := func(body string) int {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", `"k1"`)
		w := httptest.NewRecorder()
		var rej guard.Rejection
		if g.Serve(w, req, flow.Call{Route: "/orders", ID: "u"}, &rej, func(_ *http.Request, c *guard.Capture) int {
			w.WriteHeader(http.StatusCreated)
			c.WriteHeader(w.Header(), http.StatusCreated)
			return http.StatusCreated
		}) {
			return w.Code
		}
		rej.Write(w)
		return w.Code
	}
	scoped := func(body []byte, keyed bool) flow.Call {
		c := flow.Call{Route: "/orders", ID: "u"}
		g.Scope(&c, http.MethodPost, "/ignored", func() ([]byte, bool) { return body, keyed })
		return c
	}
	require.Equal(t, http.StatusCreated, serveHTTP("a"))
	var ref flow.Refusal
	for body, want := range map[string]flow.Reason{"a": flow.ReasonReplayed, "b": flow.ReasonKeyReused} {
		c := scoped([]byte(body), true)
		assert.Equal(t, "POST", c.Method)
		assert.Equal(t, "/orders", c.Route)
		ran := g.Job().Serve(context.Background(), c, &ref, func(flow.Permit) flow.Outcome { return flow.Outcome{} })
		assert.False(t, ran, "body %q", body)
		assert.Equal(t, want, ref.Reason, "body %q", body)
	}
	assert.Empty(t, scoped([]byte("a"), false).Fingerprint, "without an Idempotency-Key")
	var ke *keyfuncs.Error
	require.ErrorAs(t, scoped(make([]byte, 1<<20+1), true).Err, &ke, "a body over 1 MiB")
	assert.Equal(t, http.StatusRequestEntityTooLarge, ke.HTTPStatus())
	c := flow.Call{Route: "/orders/:id", ID: "u"}
	guard.Lock(newLock(t, throttle.LockConfig{Name: "submit"})).Scope(&c, http.MethodPost, "/orders/7", func() ([]byte, bool) {
		t.Error("a Lock looked up the Idempotency-Key field")
		return []byte("a"), true
	})
	assert.Equal(t, flow.Call{Route: "/orders/:id", ID: "u"}, c, "a Lock's call")
}
