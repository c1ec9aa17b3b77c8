package ginadapter_test

import (
	"net/http"
	"testing"

	"github.com/go-throttle/throttle/throttle/guard"

	"github.com/gin-gonic/gin"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	goleak.VerifyTestMain(m)
}

// engine serves h for every method and path on a gin.Engine behind mw.
func engine(h http.Handler, mw ...gin.HandlerFunc) *gin.Engine {
	e := gin.New()
	e.Any("/*path", append(mw, gin.WrapH(h))...)
	return e
}

var adapter = adaptertest.Adapter{
	Name: "gin",
	Wrap: func(l *throttle.Limiter, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, ginadapter.Middleware(l, key))
	},
	WrapCustom: func(l *throttle.Limiter, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, ginadapter.Middleware(l, key, ginadapter.WithRejectHandler(
			func(c *gin.Context, rej *guard.Rejection) {
				c.Header(adaptertest.CustomHeader, rej.Reason.String())
				c.AbortWithStatus(adaptertest.CustomStatus)
			})))
	},
	WrapCost: func(l *throttle.Limiter, key keyfuncs.Func, cost func(*http.Request) (int, error), h http.Handler) http.Handler {
		return engine(h, ginadapter.Middleware(l, key, ginadapter.WithCost(cost)))
	},
	Bare: func(h http.Handler) http.Handler { return engine(h) },
}

func TestSuite(t *testing.T) { adaptertest.Run(t, adapter) }

func TestStoreFailures(t *testing.T) { adaptertest.RunStoreFailures(t, adapter) }
