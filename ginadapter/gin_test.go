package ginadapter_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/guard"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
)

// With gin.Recovery upstream, a panic is answered 500 by gin and the key is
// released.
func TestRecoveryUpstream(t *testing.T) {
	l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
	e := gin.New()
	e.Use(gin.CustomRecoveryWithWriter(nopWriter{}, func(c *gin.Context, _ any) {
		c.AbortWithStatus(http.StatusInternalServerError)
	}))
	calls := 0
	e.POST("/submit", ginadapter.Middleware(l, adaptertest.UserKey()), func(c *gin.Context) {
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
	l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
	e := gin.New()
	calls := 0
	e.POST("/submit", ginadapter.Middleware(l, adaptertest.UserKey(), ginadapter.WithRejectHandler(
		func(c *gin.Context, rej *guard.Rejection) {
			guard.SetHeaders(c.Writer.Header(), rej)
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
	if calls != 1 {
		t.Fatalf("handler ran %d times, want 1", calls)
	}
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
		l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
		e := gin.New()
		mw := ginadapter.ContextMiddleware(l, keyfuncs.Join(ginadapter.Value("user"), ginadapter.FullPath()))
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
			if got := adaptertest.Serve(e, r).Code; got != w.code {
				t.Fatalf("%s as %q: %d, want %d", w.path, w.user, got, w.code)
			}
		}
	})

	t.Run("ClientIP with SetTrustedProxies(nil)", func(t *testing.T) {
		l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
		e := gin.New()
		if err := e.SetTrustedProxies(nil); err != nil {
			t.Fatal(err)
		}
		key, err := ginadapter.ClientIP(e)
		if err != nil {
			t.Fatal(err)
		}
		e.POST("/submit", ginadapter.ContextMiddleware(l, key), ok)
		for i, code := range []int{201, 429} {
			r := adaptertest.Submit("")
			r.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)) // spoofed
			adaptertest.Status(t, adaptertest.Serve(e, r), code)
		}
	})

	// gin's default (every peer a trusted proxy, so a client's own
	// X-Forwarded-For is a new identity per request) is refused up front.
	t.Run("ClientIP refuses the default engine", func(t *testing.T) {
		if key, err := ginadapter.ClientIP(gin.New()); err == nil || key != nil {
			t.Fatalf("ClientIP(gin.New()) = %v, %v; want nil and an error", key != nil, err)
		}
	})

	t.Run("FirstOf matches keyfuncs", func(t *testing.T) {
		l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
		e := gin.New()
		if err := e.SetTrustedProxies(nil); err != nil {
			t.Fatal(err)
		}
		clientIP, err := ginadapter.ClientIP(e)
		if err != nil {
			t.Fatal(err)
		}
		e.POST("/a", ginadapter.Middleware(l, adaptertest.ExampleKey()), ok)
		e.POST("/b", ginadapter.ContextMiddleware(l, keyfuncs.FirstOf(
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
		l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
		for _, tc := range []struct {
			v    any
			code int
		}{{userID(7), 201}, {"", 400}, {3.5, 400}, {(*stringer)(nil), 400}, {&stringer{"s"}, 201}} {
			e := gin.New()
			e.POST("/submit", func(c *gin.Context) { c.Set("user", tc.v) },
				ginadapter.ContextMiddleware(l, ginadapter.Value("user")), ok)
			if got := adaptertest.Serve(e, adaptertest.Submit("")).Code; got != tc.code {
				t.Fatalf("value %#v: %d, want %d", tc.v, got, tc.code)
			}
		}
	})
}

type stringer struct{ s string }

func (s *stringer) String() string { return s.s }
