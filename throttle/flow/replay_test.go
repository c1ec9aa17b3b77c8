package flow

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func newReplay(t testing.TB, opts ...Option) *Job {
	t.Helper()
	r, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{Name: "orders", TTL: time.Minute, Wait: -1})
	require.NoError(t, err)
	return Replay(r, opts...)
}

// serve serves c on j with next, and returns the refusal when it did not
// go ahead.
func serve(j *Job, c Call, next func(Permit) Outcome) (Refusal, bool) {
	var ref Refusal
	ok := j.Serve(context.Background(), c, &ref, next)
	return ref, ok
}

// TestReplayFieldsOfNow: a replay's RateLimit fields are those of now, t
// from the record's expiry, whatever the answer holds; a record whose
// expiry is unknown or past gets RateLimit without t.
func TestReplayFieldsOfNow(t *testing.T) {
	a := &Answer{Status: 201, Header: map[string][]string{"Location": {"/orders/7"}}, Body: []byte(`{"id":7}`)}
	for _, c := range []struct {
		name    string
		expires time.Time
		limit   string
		retry   time.Duration
	}{
		{"held 30 s", time.Now().Add(30 * time.Second), `"orders";r=0;t=30`, 30 * time.Second},
		{"held 1.2 s", time.Now().Add(1200 * time.Millisecond), `"orders";r=0;t=2`, 2 * time.Second},
		{"expiry unknown", time.UnixMilli(0), `"orders";r=0`, 0},
		{"expired", time.Now().Add(-time.Second), `"orders";r=0`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := newReplay(t).replayed(encodeRecord(a, "", c.expires), "")
			require.Equal(t, ReasonReplayed, ref.Reason, "%+v", ref)
			require.Equal(t, a, ref.Replayed)
			assert.Equal(t, c.retry, ref.RetryAfter, "RetryAfter")
			policy, limit := fieldsOf(&ref.Limits)
			assert.Equal(t, `"orders";q=1;w=60`, policy)
			assert.Equal(t, c.limit, limit)
		})
	}
	// A record this version cannot read is never answered with.
	ref := newReplay(t).replayed([]byte{9, 9}, "")
	assert.Equal(t, ReasonContended, ref.Reason)
	assert.Equal(t, time.Second, ref.RetryAfter)
}

// TestReplayed: a duplicate gets the first call's answer; one with
// another fingerprint is refused, and so is one whose first call's answer
// was not kept, until the key expires; a failed first call frees the key.
func TestReplayed(t *testing.T) {
	j := newReplay(t)
	a := &Answer{Status: 201, Body: []byte("ok")}
	_, ok := serve(j, Call{ID: "u", Fingerprint: "f1"}, func(p Permit) Outcome {
		require.True(t, p.Records(), "a key's first call records")
		return Outcome{Answer: a}
	})
	require.True(t, ok)
	ref, ok := serve(j, Call{ID: "u", Fingerprint: "f1"}, nil)
	require.False(t, ok)
	require.Equal(t, ReasonReplayed, ref.Reason)
	require.Equal(t, a.Body, ref.Replayed.Body)
	ref, _ = serve(j, Call{ID: "u", Fingerprint: "f2"}, nil)
	require.Equal(t, ReasonKeyReused, ref.Reason)
	ref, _ = serve(j, Call{ID: "u"}, nil)
	require.Equal(t, ReasonReplayed, ref.Reason, "no fingerprint matches any")

	_, ok = serve(j, Call{ID: "v"}, func(Permit) Outcome { return Outcome{} }) // nothing to keep
	require.True(t, ok)
	ref, _ = serve(j, Call{ID: "v"}, nil)
	require.Equal(t, ReasonNotKept, ref.Reason)
	require.Greater(t, ref.RetryAfter, 50*time.Second, "until the key expires")

	_, ok = serve(j, Call{ID: "w"}, func(Permit) Outcome { return Outcome{Failed: true, Answer: a} })
	require.True(t, ok)
	p, _, ok := j.Begin(context.Background(), Call{ID: "w"})
	require.True(t, ok, "a failed first call's key is free for a retry")
	p.End(Outcome{Failed: true})
}

// TestReplayInFlight: a duplicate of a call still running is refused
// with ReasonInFlight and a retry in a second.
func TestReplayInFlight(t *testing.T) {
	j := newReplay(t)
	p, _, ok := j.Begin(context.Background(), Call{ID: "u"})
	require.True(t, ok)
	defer p.End(Outcome{Failed: true})
	ref, ok := serve(j, Call{ID: "u"}, nil)
	require.False(t, ok)
	assert.Equal(t, ReasonInFlight, ref.Reason)
	assert.Equal(t, time.Second, ref.RetryAfter)
	policy, limit := fieldsOf(&ref.Limits)
	assert.Equal(t, `"orders";q=1;w=60`, policy)
	assert.Empty(t, limit)
}

// TestReplayScope: a Replay stores its keys under the method, the route
// and the identity, escaped: no triple passes for another.
func TestReplayScope(t *testing.T) {
	j := newReplay(t)
	first := func(c Call) bool {
		_, ok := serve(j, c, func(Permit) Outcome { return Outcome{Answer: &Answer{Status: 201}} })
		return ok
	}
	require.True(t, first(Call{Method: "POST", Route: "/orders", ID: "k"}))
	require.False(t, first(Call{Method: "POST", Route: "/orders", ID: "k"}), "the same call again")
	for _, c := range []Call{
		{Method: "PUT", Route: "/orders", ID: "k"},
		{Method: "POST", Route: "/refunds", ID: "k"},
		{Method: "POST", Route: "/orders", ID: "k2"},
		{Route: "/orders", ID: "k"},
		{Method: "POST", Route: "/orders:k", ID: ""},
		{Method: "POST:/orders", ID: "k"},
	} {
		require.True(t, first(c), "%+v answered with another call's answer", c)
	}
}
