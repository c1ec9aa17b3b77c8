package ginadapter_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/guard"
)

// With gin.Recovery upstream, a panic is answered 500 by gin and the key is
// released.
func TestRecoveryUpstream(t *testing.T) {
	g, _ := submitGuard(t)
	e := gin.New()
	e.Use(gin.CustomRecoveryWithWriter(nopWriter{}, func(c *gin.Context, _ any) {
		c.AbortWithStatus(http.StatusInternalServerError)
	}))
	calls := 0
	e.POST("/submit", ginadapter.Middleware(g, adaptertest.UserKey()), func(c *gin.Context) {
		calls++
		if calls == 1 {
			panic("boom")
		}
		c.Status(http.StatusCreated)
	})
	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("u1")), http.StatusInternalServerError)
	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("u1")), http.StatusCreated)
	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("u1")), http.StatusTooManyRequests)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// A reject handler that forgets to abort still stops the chain.
func TestRejectHandlerWithoutAbort(t *testing.T) {
	g, _ := submitGuard(t)
	e := gin.New()
	calls := 0
	e.POST("/submit", ginadapter.Middleware(g, adaptertest.UserKey(), ginadapter.WithRejectHandler(
		func(c *gin.Context, rej *guard.Rejection) {
			c.JSON(rej.Status, gin.H{"error": "slow down"})
		})), func(c *gin.Context) {
		calls++
		c.Status(http.StatusCreated)
	})
	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("u1")), http.StatusCreated)
	rec := adaptertest.Serve(e, adaptertest.Submit("u1"))
	adaptertest.Status(t, rec, http.StatusTooManyRequests)
	adaptertest.RetryAfter(t, rec.Header())
	adaptertest.CheckRateLimit(t, rec.Header(), "submit", `"submit";q=1;w=5`, 5)
	require.Equal(t, 1, calls, "handler runs")
}

// gin's own key sources.
func TestContextKeys(t *testing.T) {
	setUser := func(c *gin.Context) {
		if u := c.GetHeader("X-Auth"); u != "" {
			c.Set("user", u)
		}
	}
	ok := func(c *gin.Context) { c.Status(http.StatusCreated) }

	t.Run("Value and FullPath", func(t *testing.T) {
		g, _ := submitGuard(t)
		e := gin.New()
		mw := ginadapter.Middleware(g, keyfuncs.Join(ginadapter.Value("user"), ginadapter.FullPath()))
		e.POST("/a/:id", setUser, mw, ok)
		e.POST("/b/:id", setUser, mw, ok)
		want := []struct {
			path, user string
			code       int
		}{
			{"/a/1", "alice", 201}, {"/a/2", "alice", 429}, // same route pattern
			{"/b/1", "alice", 201}, {"/a/1", "bob", 201}, {"/a/1", "", 400},
		}
		for _, w := range want {
			r := adaptertest.Submit("")
			r.URL.Path = w.path
			if w.user != "" {
				r.Header.Set("X-Auth", w.user)
			}
			require.Equal(t, w.code, adaptertest.Serve(e, r).Code, "%s as %q", w.path, w.user)
		}
	})

	t.Run("ClientIP with SetTrustedProxies(nil)", func(t *testing.T) {
		g, _ := submitGuard(t)
		e := gin.New()
		require.NoError(t, e.SetTrustedProxies(nil))
		key, err := ginadapter.ClientIP(e)
		require.NoError(t, err)
		e.POST("/submit", ginadapter.Middleware(g, key), ok)
		for i, code := range []int{201, 429} {
			r := adaptertest.Submit("")
			r.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)) // spoofed
			adaptertest.Status(t, adaptertest.Serve(e, r), code)
		}
	})

	// gin's default (every peer a trusted proxy, so a client's own
	// X-Forwarded-For is a new identity per request) is refused up front.
	t.Run("ClientIP refuses the default engine", func(t *testing.T) {
		key, err := ginadapter.ClientIP(gin.New())
		require.Error(t, err, "ClientIP(gin.New())")
		require.Nil(t, key, "ClientIP(gin.New())")
	})

	t.Run("FirstOf matches keyfuncs", func(t *testing.T) {
		g, _ := submitGuard(t)
		e := gin.New()
		require.NoError(t, e.SetTrustedProxies(nil))
		clientIP, err := ginadapter.ClientIP(e)
		require.NoError(t, err)
		e.POST("/a", ginadapter.Middleware(g, adaptertest.ExampleKey()), ok)
		e.POST("/b", ginadapter.Middleware(g, keyfuncs.FirstOf(
			ginadapter.Request(adaptertest.UserKey()), clientIP)), ok)
		r := adaptertest.Submit("")
		r.URL.Path = "/a"
		adaptertest.Status(t, adaptertest.Serve(e, r), 201)
		r = adaptertest.Submit("")
		r.URL.Path = "/b"
		adaptertest.Status(t, adaptertest.Serve(e, r), 429)
	})

	t.Run("Value types", func(t *testing.T) {
		type userID int64
		g, _ := submitGuard(t)
		for _, tc := range []struct {
			v    any
			code int
		}{{userID(7), 201}, {"", 400}, {3.5, 400}, {(*stringer)(nil), 400}, {&stringer{"s"}, 201}} {
			e := gin.New()
			e.POST("/submit", func(c *gin.Context) { c.Set("user", tc.v) },
				ginadapter.Middleware(g, ginadapter.Value("user")), ok)
			require.Equal(t, tc.code, adaptertest.Serve(e, adaptertest.Submit("")).Code, "value %#v", tc.v)
		}
	})
}

type stringer struct{ s string }

func (s *stringer) String() string { return s.s }
