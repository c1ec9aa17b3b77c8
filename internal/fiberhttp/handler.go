// Package fiberhttp runs net/http handlers inside fiber, for the fiber
// adapter's tests and the fiber example, which serve the handlers the
// other adapters and examples share.
package fiberhttp

import (
	"net/http"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
)

// Handler runs h as a fiber handler on the request's own goroutine (fiber's
// adaptor.HTTPHandler runs it on another and replaces its panic with one of
// its own): its request is fiber's, converted, with c.Context(), which
// carries the throttle lease, as its context; what it writes goes to
// fiber's response, the header fields it sets replacing those set before
// it (as net/http's header map does), the body buffered. It has no Flush.
func Handler(h http.Handler) fiber.Handler {
	return func(c fiber.Ctx) error {
		r, err := adaptor.ConvertRequest(c, true)
		if err != nil {
			return err
		}
		w := &writer{c: c, h: http.Header{}}
		for k, v := range c.Response().Header.All() { // set before h runs
			w.h.Add(string(k), string(v))
		}
		h.ServeHTTP(w, r.WithContext(c.Context()))
		w.WriteHeader(http.StatusOK) // sends the header if nothing was written
		return nil
	}
}

// writer is an http.ResponseWriter on a fiber response.
type writer struct {
	c     fiber.Ctx
	h     http.Header
	wrote bool
}

func (w *writer) Header() http.Header { return w.h }

func (w *writer) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	res := &w.c.Response().Header
	for k, vs := range w.h {
		res.Del(k)
		for _, v := range vs {
			res.Add(k, v)
		}
	}
	w.c.Status(status)
}

func (w *writer) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.c.Response().AppendBody(b)
	return len(b), nil
}
