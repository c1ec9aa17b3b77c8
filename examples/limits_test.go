package examples_test

import (
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
)

// The rates of GET /api/items (DESIGN section 6), free and pro plans.
const (
	itemsPolicy    = `"items-burst";q=5;w=10, "items-hourly";q=30;w=3600`
	itemsProPolicy = `"items-burst";q=20;w=10, "items-hourly";q=120;w=3600`
	exportsPolicy  = `"exports";q=2;qu="concurrent-requests"`
	adminToken     = "s3cret-token"
)

// itemsField matches a RateLimit field of GET /api/items: both policies,
// burst first.
var itemsField = regexp.MustCompile(`^"items-burst";r=(\d+);t=\d+, "items-hourly";r=(\d+);t=\d+$`)

// get sends a request as user (no X-User-ID when "") with the bearer token
// (none when "").
func send(c *http.Client, a *app, method, path, user, token string) reply {
	req, err := http.NewRequest(method, a.url+path, nil)
	if err != nil {
		return reply{app: a, err: err}
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r := do(c, req)
	r.app = a
	return r
}

// itemsLeft returns the r of both policies in an admitted or refused answer.
func itemsLeft(t *testing.T, r reply) (burst, hourly int) {
	t.Helper()
	m := itemsField.FindStringSubmatch(r.rateLimit)
	require.NotNil(t, m, "%s: RateLimit %q is not both items policies, burst first", r.app.name, r.rateLimit)
	burst, _ = strconv.Atoi(m[1])
	hourly, _ = strconv.Atoi(m[2])
	return burst, hourly
}

// checkItems spends user's burst of 5 over apps (round robin), then checks
// that the next request is refused and charged to neither policy.
func checkItems(t *testing.T, c *http.Client, apps []*app, user string) {
	for i := range 5 {
		r := send(c, apps[i%len(apps)], http.MethodGet, "/api/items", user, "")
		require.NoError(t, r.err)
		require.Equal(t, http.StatusOK, r.status, "%s request %d: %s", r.app.name, i+1, r.body)
		assert.Equal(t, "application/json", r.contentType)
		assert.Equal(t, itemsPolicy, r.policy, "%s: RateLimit-Policy", r.app.name)
		b, h := itemsLeft(t, r)
		assert.Equal(t, 4-i, b, "burst r after request %d", i+1)
		assert.Equal(t, 29-i, h, "hourly r after request %d", i+1)
	}
	for i := range 2 {
		r := send(c, apps[i%len(apps)], http.MethodGet, "/api/items", user, "")
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s: sixth request within 10 s", r.app.name)
		assert.Equal(t, "application/problem+json", r.contentType)
		assert.Equal(t, itemsPolicy, r.policy)
		b, h := itemsLeft(t, r)
		assert.Equal(t, 0, b, "burst r of a refusal")
		assert.Equal(t, 25, h, "hourly r of a refusal: a refused request was charged")
		n, err := strconv.Atoi(r.retryAfter)
		require.NoError(t, err, "Retry-After %q", r.retryAfter)
		assert.True(t, n >= 1 && n <= 2, "Retry-After %d: when one request fits both (2 s)", n)
	}
	pro := send(c, apps[0], http.MethodGet, "/api/items", "pro-"+user, "")
	require.Equal(t, http.StatusOK, pro.status)
	assert.Equal(t, itemsProPolicy, pro.policy, "the pro plan's RateLimit-Policy")
	b, h := itemsLeft(t, pro)
	assert.Equal(t, []int{19, 119}, []int{b, h}, "the pro plan's r")
}

// checkExports runs three exports of one user at once over apps: two run,
// the third gets 409 while they do.
func checkExports(t *testing.T, c *http.Client, apps []*app, user string, work time.Duration) {
	var wg sync.WaitGroup
	first := make([]reply, 2)
	for i := range first {
		wg.Go(func() { first[i] = send(c, apps[i%len(apps)], http.MethodPost, "/exports", user, "") })
	}
	time.Sleep(work / 3) // both are running
	third := send(c, apps[len(apps)-1], http.MethodPost, "/exports", user, "")
	other := send(c, apps[0], http.MethodPost, "/exports", user+"-other", "")
	wg.Wait()
	for _, r := range first {
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status, "%s: one of two exports: %s", r.app.name, r.body)
		assert.Equal(t, exportsPolicy, r.policy)
	}
	assert.Equal(t, http.StatusConflict, third.status, "%s: a third export while two run: %s", third.app.name, third.body)
	assert.Equal(t, exportsPolicy, third.policy, "the third's RateLimit-Policy")
	assert.Equal(t, "application/problem+json", third.contentType)
	assert.Equal(t, http.StatusOK, other.status, "another user's export")
	after := send(c, apps[0], http.MethodPost, "/exports", user, "")
	assert.Equal(t, http.StatusOK, after.status, "an export after the two finished")
}

// checkAdmin: a wrong or missing token gets 401 and clears nothing; the
// token clears the user's quotas and frees its held keys (204).
func checkAdmin(t *testing.T, c *http.Client, apps []*app, user string) {
	a := apps[0]
	require.Equal(t, http.StatusOK, submit(c, a, user).status, "first submission")
	for range 10 {
		require.Equal(t, http.StatusOK, search(c, a, user, "x").status)
	}
	for range 5 {
		require.Equal(t, http.StatusOK, send(c, a, http.MethodGet, "/api/items", user, "").status)
	}
	require.Equal(t, http.StatusTooManyRequests, search(c, a, user, "x").status, "search spent")

	for _, token := range []string{"", "wrong", adminToken + "x"} {
		r := send(c, apps[len(apps)-1], http.MethodPost, "/admin/reset?user="+user, "", token)
		assert.Equal(t, http.StatusUnauthorized, r.status, "token %q", token)
		assert.Equal(t, "application/problem+json", r.contentType)
		assert.Empty(t, r.policy, "the admin route is not throttled")
	}
	require.Equal(t, http.StatusTooManyRequests, search(c, a, user, "x").status, "a 401 cleared the search quota")
	require.Equal(t, http.StatusTooManyRequests, submit(c, a, user).status, "a 401 freed /submit")

	r := send(c, apps[len(apps)-1], http.MethodPost, "/admin/reset?user="+user, "", adminToken)
	require.Equal(t, http.StatusNoContent, r.status, "reset: %s", r.body)
	s := search(c, apps[len(apps)-1], user, "x")
	require.Equal(t, http.StatusOK, s.status, "search after the reset")
	assert.Equal(t, `"search";r=9;t=6`, s.rateLimit)
	items := send(c, a, http.MethodGet, "/api/items", user, "")
	require.Equal(t, http.StatusOK, items.status, "items after the reset")
	b, h := itemsLeft(t, items)
	assert.Equal(t, []int{4, 29}, []int{b, h}, "items r after the reset")
	assert.Equal(t, http.StatusOK, submit(c, a, user).status, "/submit after the reset")
	for range 3 {
		reset := send(c, a, http.MethodPost, "/admin/reset?user="+user, "", adminToken)
		assert.Equal(t, http.StatusNoContent, reset.status, "reset is never throttled")
	}
}

// TestLimitsMemory runs GET /api/items, POST /exports and POST /admin/reset
// on each example with its in-memory store.
func TestLimitsMemory(t *testing.T) {
	skipUnlessProcesses(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name, "-work", "1s", "-admin-token", adminToken)
			c := newClient(t)
			checkItems(t, c, []*app{a}, "ann")
			checkExports(t, c, []*app{a}, "ann", time.Second)
			checkAdmin(t, c, []*app{a}, "bea")
			plain := startApp(t, name)
			r := send(c, plain, http.MethodPost, "/admin/reset?user=bea", "", adminToken)
			assert.Equal(t, http.StatusNotFound, r.status, "POST /admin/reset without -admin-token")
		})
	}
}

// TestLimitsSharedRedis runs the four examples on one redis-server: the
// items quotas, the exports in flight and the admin reset are shared.
func TestLimitsSharedRedis(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	args := []string{"-redis", srv.Addr, "-work", "1s", "-admin-token", adminToken}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)
	checkItems(t, c, apps, "zoe")
	checkExports(t, c, apps, "zoe", time.Second)
	checkAdmin(t, c, apps, "yan")
}
