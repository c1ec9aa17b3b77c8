package fiberadapter_test

import (
	"net/http"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
)

// httpHandler runs h as a fiber handler on the request's own goroutine
// (fiber's adaptor.HTTPHandler runs it on another, and turns its panic
// into one of its own): its request is fiber's, converted, with
// c.Context(), which carries the lease, as its context; what it writes
// goes to fiber's response.
func httpHandler(h http.Handler) fiber.Handler {
	return func(c fiber.Ctx) error {
		r, err := adaptor.ConvertRequest(c, true)
		if err != nil {
			return err
		}
		w := &writer{c: c, h: http.Header{}}
		for k, v := range c.Response().Header.All() { // the middleware's fields
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
