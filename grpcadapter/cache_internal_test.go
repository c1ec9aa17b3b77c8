package grpcadapter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// TestCacheCollision: keys that share a slot replace each other's value,
// and each still gets its own.
func TestCacheCollision(t *testing.T) {
	var c cache[string, string]
	build := func(k string) string { return "v-" + k }
	for range 3 {
		require.Equal(t, "v-a", c.get(7, "a", build))
		require.Equal(t, "v-b", c.get(7+cacheSlots, "b", build)) // the same slot
	}
	built := 0
	count := func(k string) string { built++; return k }
	c.get(9, "c", count)
	c.get(9, "c", count)
	require.Equal(t, 1, built, "a hit builds nothing")
}

// TestStatusKey: a refusal's status is built once per code, message, delay
// and set of policies; another delay or another set gets its own.
func TestStatusKey(t *testing.T) {
	k := func(retry time.Duration, names ...string) refused {
		key := statusKey{code: codes.ResourceExhausted, msg: "spent", retry: retry}
		key.n = copy(key.names[:], names)
		return statuses.get(key.hash(), key, func(k statusKey) refused { return newRefused(&k, k.names[:k.n]) })
	}
	a := k(time.Minute, "hourly")
	require.Same(t, a.st, k(time.Minute, "hourly").st, "built once")
	require.Equal(t, a.err, k(time.Minute, "hourly").err)
	for _, other := range []refused{k(2*time.Minute, "hourly"), k(time.Minute, "daily"), k(time.Minute, "hourly", "daily")} {
		require.NotSame(t, a.st, other.st)
	}
	details := k(2*time.Minute, "hourly", "daily").st.Details()
	require.Len(t, details, 2)
	require.Equal(t, 2*time.Minute, details[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration())
	qf := details[1].(*errdetails.QuotaFailure).GetViolations()
	require.Len(t, qf, 2)
	require.Equal(t, "daily", qf[1].GetQuotaId())
}

// TestLimitsMDValues: the header metadata a field's values make, cached or
// not.
func TestLimitsMDValues(t *testing.T) {
	for _, c := range []struct {
		policy, limit []string
		want          metadata.MD
	}{
		{nil, nil, nil},
		{[]string{`"q";q=1;w=60`}, nil, metadata.MD{"ratelimit-policy": {`"q";q=1;w=60`}}},
		{[]string{`"q";q=1;w=60`}, []string{`"q";r=0;t=5`}, metadata.MD{"ratelimit-policy": {`"q";q=1;w=60`}, "ratelimit": {`"q";r=0;t=5`}}},
		{[]string{"a", "b"}, []string{""}, metadata.MD{"ratelimit-policy": {"a", "b"}, "ratelimit": {""}}}, // not cached
	} {
		for range 2 { // built, then cached
			require.Equal(t, c.want, fieldsMD(c.policy, c.limit))
		}
	}
}
