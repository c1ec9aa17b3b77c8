package ginadapter_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

var errSubmit = errors.New("submit failed")

// renderErrors is the usual gin error middleware, registered before the
// throttle middleware: handlers record errors with c.Error and return, and
// it answers 500 once the rest of the chain has returned.
func renderErrors(c *gin.Context) {
	c.Next()
	if len(c.Errors) > 0 && !c.Writer.Written() {
		c.JSON(http.StatusInternalServerError, gin.H{"error": "internal"})
	}
}

// errorEngine serves POST /submit on a gin engine with renderErrors (when
// withRenderer), the throttle middleware for g and handler; the handler is
// told which call it is, from 1.
func errorEngine(t *testing.T, g *guard.Guard, withRenderer bool, handler func(c *gin.Context, call int)) *gin.Engine {
	t.Helper()
	e := gin.New()
	if withRenderer {
		e.Use(renderErrors)
	}
	calls := 0
	e.POST("/submit", ginadapter.Middleware(g, adaptertest.UserKey()), func(c *gin.Context) {
		calls++
		handler(c, calls)
	})
	return e
}

// serveAll sends POST /submit as u1 once per status in want and checks the
// answers.
func serveAll(t *testing.T, e *gin.Engine, want ...int) {
	t.Helper()
	for i, code := range want {
		got := adaptertest.Serve(e, adaptertest.Submit("u1"))
		require.Equal(t, code, got.Code, "request %d (body %q)", i+1, got.Body.String())
	}
}

// An error recorded with c.Error and rendered by a middleware upstream, after
// the hold has ended, releases the Dedupe key like a 500 written by the
// handler, whatever the gin error type.
func TestCErrorRenderedUpstreamReleases(t *testing.T) {
	for name, record := range map[string]func(c *gin.Context){
		"private (c.Error default)": func(c *gin.Context) { _ = c.Error(errSubmit) },
		"public":                    func(c *gin.Context) { _ = c.Error(errSubmit).SetType(gin.ErrorTypePublic) },
		"render":                    func(c *gin.Context) { _ = c.Error(errSubmit).SetType(gin.ErrorTypeRender) },
		"bind":                      func(c *gin.Context) { _ = c.Error(errSubmit).SetType(gin.ErrorTypeBind) },
		"wrapped gin.Error": func(c *gin.Context) {
			_ = c.Error(&gin.Error{Err: errSubmit, Type: gin.ErrorTypePublic, Meta: "m"})
		},
		"c.Render that fails": func(c *gin.Context) {
			c.JSON(http.StatusCreated, func() {}) // not marshalable: gin records it and writes nothing
		},
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := submitGuard(t)
			e := errorEngine(t, g, true, func(c *gin.Context, call int) {
				if call == 1 {
					record(c)
					return
				}
				c.Status(http.StatusCreated)
			})
			// 500 from the error middleware, then the retry is admitted and
			// its success kept.
			serveAll(t, e, http.StatusInternalServerError, http.StatusCreated, http.StatusTooManyRequests)
		})
	}
}

// Without a middleware to render it, gin answers an unwritten response 200
// with no body; the handler reported an error, so the key is released all
// the same.
func TestCErrorWithoutRendererReleases(t *testing.T) {
	g, _ := submitGuard(t)
	e := errorEngine(t, g, false, func(c *gin.Context, call int) {
		if call == 1 {
			_ = c.Error(errSubmit)
			return
		}
		c.Status(http.StatusCreated)
	})
	serveAll(t, e, http.StatusOK, http.StatusCreated, http.StatusTooManyRequests)
}

// A response already written stands: an error recorded for logging, before
// or after the 201 is written, does not release the key.
func TestCErrorAfterWrittenSuccessKeeps(t *testing.T) {
	for name, h := range map[string]func(c *gin.Context){
		"error after": func(c *gin.Context) {
			c.JSON(http.StatusCreated, gin.H{"ok": true})
			_ = c.Error(errSubmit)
		},
		"error before": func(c *gin.Context) {
			_ = c.Error(errSubmit)
			c.JSON(http.StatusCreated, gin.H{"ok": true})
		},
		"header only": func(c *gin.Context) {
			_ = c.Error(errSubmit)
			c.Status(http.StatusNoContent)
			c.Writer.WriteHeaderNow()
		},
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := submitGuard(t)
			e := errorEngine(t, g, true, func(c *gin.Context, _ int) { h(c) })
			code := http.StatusCreated
			if name == "header only" {
				code = http.StatusNoContent
			}
			serveAll(t, e, code, http.StatusTooManyRequests)
		})
	}
}

// An error status set before the chain returns is the one reported, so that
// a guard.WithFailed that keeps the key on client errors still decides: a
// 409 set with c.Status (not yet written) or written by c.AbortWithError is
// not turned into 500.
func TestCErrorKeepsErrorStatusSet(t *testing.T) {
	serverErrorsOnly := func(t *testing.T) *guard.Guard {
		l := adaptertest.NewLock(t, throttle.LockConfig{Name: "submit"})
		return guard.Lock(l, guard.WithFailed(func(s int) bool { return s >= 500 }))
	}
	for name, h := range map[string]func(c *gin.Context){
		"c.Status then c.Error": func(c *gin.Context) {
			c.Status(http.StatusConflict)
			_ = c.Error(errSubmit)
		},
		"c.AbortWithError": func(c *gin.Context) { _ = c.AbortWithError(http.StatusConflict, errSubmit) },
	} {
		t.Run(name, func(t *testing.T) {
			g := serverErrorsOnly(t)
			e := gin.New()
			// This renderer keeps the status the handler chose.
			e.Use(func(c *gin.Context) {
				c.Next()
				if len(c.Errors) > 0 && !c.Writer.Written() {
					c.JSON(c.Writer.Status(), gin.H{"error": c.Errors.Last().Error()})
				}
			})
			e.POST("/submit", ginadapter.Middleware(g, adaptertest.UserKey()), h)
			serveAll(t, e, http.StatusConflict, http.StatusTooManyRequests)
		})
	}
	// The same guard releases the key when no status was set: 500.
	g := serverErrorsOnly(t)
	e := gin.New()
	e.Use(renderErrors)
	calls := 0
	e.POST("/submit", ginadapter.Middleware(g, adaptertest.UserKey()), func(c *gin.Context) {
		if calls++; calls == 1 {
			_ = c.Error(errSubmit)
			return
		}
		c.Status(http.StatusCreated)
	})
	serveAll(t, e, http.StatusInternalServerError, http.StatusCreated, http.StatusTooManyRequests)
}

// Cooldown keeps the key whatever the handler reports.
func TestCErrorCooldownKeeps(t *testing.T) {
	g, _ := adaptertest.LockGuard(t, throttle.LockConfig{Name: "submit", Mode: throttle.Cooldown})
	e := errorEngine(t, g, true, func(c *gin.Context, _ int) {
		_ = c.Error(errSubmit)
	})
	serveAll(t, e, http.StatusInternalServerError, http.StatusTooManyRequests)
}
