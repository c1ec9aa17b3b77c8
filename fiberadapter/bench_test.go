package fiberadapter_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/limiter"
	"github.com/valyala/fasthttp"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// benchClients is how many client addresses the admitted cases take in
// turn: the stores hold that many keys in a steady state.
const benchClients = 1 << 16

// clientAddrs returns n distinct TCP peers.
func clientAddrs(n int) []net.Addr {
	addrs := make([]net.Addr, n)
	for i := range addrs {
		addrs[i] = &net.TCPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 40000}
	}
	return addrs
}

// submitApp serves POST /submit, 201 with a small body, behind mw.
func submitApp(mw ...fiber.Handler) fasthttp.RequestHandler {
	app := fiber.New()
	h := []any{func(c fiber.Ctx) error { return c.Status(http.StatusCreated).Send(created) }}
	for i := len(mw) - 1; i >= 0; i-- {
		h = append([]any{mw[i]}, h...)
	}
	app.Post("/submit", h[0], h[1:]...)
	return app.Handler()
}

var created = []byte(`{"ok":true}` + "\n")

// driver serves POST /submit to h, as fasthttp's server does, through
// one reused fasthttp.RequestCtx; serve fails the benchmark or test on
// another status than want.
type driver struct {
	tb  testing.TB
	h   fasthttp.RequestHandler
	ctx fasthttp.RequestCtx
}

func newDriver(tb testing.TB, h fasthttp.RequestHandler) *driver {
	d := &driver{tb: tb, h: h}
	var req fasthttp.Request
	req.Header.SetMethod(http.MethodPost)
	req.SetRequestURI("/submit")
	d.ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)}, nil)
	return d
}

func (d *driver) serve(from net.Addr, want int) {
	d.ctx.SetRemoteAddr(from)
	d.ctx.Response.Reset()
	d.h(&d.ctx)
	if got := d.ctx.Response.StatusCode(); got != want {
		d.tb.Fatalf("status %d, want %d", got, want)
	}
}

// BenchmarkMiddleware compares, on one goroutine and memory stores, the
// throttle middleware with fiber's own limiter (fixed window, its default
// memory storage), both keyed by the client IP: a request of one of
// benchClients clients taken in turn, admitted, and one of a client over
// its limit, turned away with 429 (throttle's with a problem body and the
// RateLimit fields). bare is the app alone; one store call each.
func BenchmarkMiddleware(b *testing.B) {
	addrs := clientAddrs(benchClients)
	hot := addrs[0]
	quota := func(b *testing.B) fiber.Handler {
		q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "submit"})
		if err != nil {
			b.Fatal(err)
		}
		return fiberadapter.Middleware(guard.Quota(q, throttle.Rate{Limit: 10000, Window: time.Hour}), fiberadapter.RemoteIP())
	}
	lock := func(b *testing.B) fiber.Handler {
		l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", TTL: 5 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		return fiberadapter.Middleware(guard.Lock(l), fiberadapter.RemoteIP())
	}
	fiberLimiter := func(*testing.B) fiber.Handler {
		return limiter.New(limiter.Config{Max: 10000, Expiration: time.Hour})
	}
	admitted := func(b *testing.B, mw ...fiber.Handler) {
		d := newDriver(b, submitApp(mw...))
		for i := range benchClients { // the stores reach their steady state
			d.serve(addrs[i], http.StatusCreated)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			d.serve(addrs[i%benchClients], http.StatusCreated)
		}
	}
	rejected := func(b *testing.B, mw fiber.Handler, first int) {
		d := newDriver(b, submitApp(mw))
		for range first {
			d.serve(hot, http.StatusCreated)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			d.serve(hot, http.StatusTooManyRequests)
		}
	}
	b.Run("bare", func(b *testing.B) { admitted(b) })
	b.Run("admitted/throttle-quota", func(b *testing.B) { admitted(b, quota(b)) })
	b.Run("admitted/fiber-limiter", func(b *testing.B) { admitted(b, fiberLimiter(b)) })
	b.Run("rejected/throttle-dedupe", func(b *testing.B) { rejected(b, lock(b), 1) })
	b.Run("rejected/throttle-quota", func(b *testing.B) {
		q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "submit"})
		if err != nil {
			b.Fatal(err)
		}
		rejected(b, fiberadapter.Middleware(guard.Quota(q, throttle.Rate{Limit: 5, Window: 5 * time.Minute}), fiberadapter.RemoteIP()), 5)
	})
	b.Run("rejected/fiber-limiter", func(b *testing.B) {
		rejected(b, limiter.New(limiter.Config{Max: 5, Expiration: 5 * time.Minute}), 5)
	})
}
