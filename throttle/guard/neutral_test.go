package guard_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
