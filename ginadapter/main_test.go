package ginadapter_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
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
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, ginadapter.Middleware(g, key))
	},
	WrapCustom: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, ginadapter.Middleware(g, key, ginadapter.WithRejectHandler(
			func(c *gin.Context, rej *guard.Rejection) {
				for k, v := range adaptertest.CustomAnswer(rej) {
					c.Header(k, v)
				}
				c.AbortWithStatus(adaptertest.CustomStatus)
			})))
	},
	Routes: func(g *guard.Guard, key keyfuncs.Func, routes map[string]http.Handler) http.Handler {
		e := gin.New()
		for path, h := range routes {
			e.Any(path, ginadapter.Middleware(g, key), gin.WrapH(h))
		}
		return e
	},
	Bare: func(h http.Handler) http.Handler { return engine(h) },
}

// submitGuard is the guard of a Dedupe lock "submit" on a fresh memory
// store, and the lock.
func submitGuard(t testing.TB) (*guard.Guard, *throttle.Lock) {
	return adaptertest.LockGuard(t, throttle.LockConfig{Name: "submit"})
}

func TestSuite(t *testing.T) { adaptertest.Run(t, adapter) }

func TestStoreFailures(t *testing.T) { adaptertest.RunStoreFailures(t, adapter) }
