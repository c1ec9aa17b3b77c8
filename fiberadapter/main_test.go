package fiberadapter_test

import (
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/internal/fiberhttp"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
)

// fasthttp keeps one goroutine for the process's life, updating the Date
// field once a second, and a served listener's worker pool leaves its
// cleaner asleep for up to 10 s after the server shut down. fiber's
// limiter, which the benchmarks compare with, starts a clock and a sweeper
// of its default storage that nothing stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/gofiber/utils/v2.StartTimeStampUpdater.func1.1"),
		goleak.IgnoreAnyFunction("github.com/gofiber/fiber/v3/internal/memory.(*Storage).gc"))
}

// newApp is a fiber app that lets panics through to the test, as the
// suite wants them.
func newApp() *fiber.App { return fiber.New() }

// engine serves h for every method and path on a fiber.App behind mw,
// as an http.Handler (adaptor.FiberApp).
func engine(h http.Handler, mw ...any) http.Handler {
	app := newApp()
	if len(mw) == 0 {
		app.All("/*", fiberhttp.Handler(h))
	} else {
		app.All("/*", mw[0], append(mw[1:], fiberhttp.Handler(h))...)
	}
	return adaptor.FiberApp(app)
}

var adapter = adaptertest.Adapter{
	Name: "fiber",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, fiberadapter.Middleware(g, fiberadapter.Request(key)))
	},
	WrapCustom: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, fiberadapter.Middleware(g, fiberadapter.Request(key), fiberadapter.WithRejectHandler(
			func(c fiber.Ctx, rej *guard.Rejection) error {
				for k, v := range adaptertest.CustomAnswer(rej) {
					c.Set(k, v)
				}
				return c.SendStatus(adaptertest.CustomStatus)
			})))
	},
	Routes: func(g *guard.Guard, key keyfuncs.Func, routes map[string]http.Handler) http.Handler {
		app := newApp()
		for path, h := range routes {
			app.All(path, fiberadapter.Middleware(g, fiberadapter.Request(key)), fiberhttp.Handler(h))
		}
		return adaptor.FiberApp(app)
	},
	Bare:     func(h http.Handler) http.Handler { return engine(h) },
	Buffered: true, // fasthttp buffers the response; fiberhttp.Handler has no Flush
	Request: func(c flow.Call) *http.Request {
		r, err := adaptor.ConvertRequest(c.Request.(fiber.Ctx), true)
		if err != nil {
			panic(err)
		}
		return r
	},
}

// submitGuard is the guard of a Dedupe lock "submit" on a fresh memory
// store, and the lock.
func submitGuard(t testing.TB) (*guard.Guard, *throttle.Lock) {
	return adaptertest.LockGuard(t, throttle.LockConfig{Name: "submit"})
}

func TestSuite(t *testing.T) { adaptertest.Run(t, adapter) }

func TestStoreFailures(t *testing.T) { adaptertest.RunStoreFailures(t, adapter) }
