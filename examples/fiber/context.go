package main

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v3"
)

// contextField carries a request's token from the net/http server to the
// fiber app: fiber's adaptor.FiberApp passes on the request's fields but
// not its context, which ends when the client leaves or the shutdown's
// grace is over (so that a job stops and frees its id).
const contextField = "X-Throttle-Example-Context"

// contexts hands each request's context from net/http to fiber.
type contexts struct {
	byToken sync.Map // token: context.Context
	last    atomic.Uint64
}

// send serves r with h, its context registered under a token in
// contextField (replacing any value the client sent).
func (cs *contexts) send(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strconv.FormatUint(cs.last.Add(1), 36)
		cs.byToken.Store(token, r.Context())
		defer cs.byToken.Delete(token)
		r.Header.Set(contextField, token)
		h.ServeHTTP(w, r)
	})
}

// receive is the app's first handler: the rest of the chain runs with the
// context registered under the request's token.
func (cs *contexts) receive(c fiber.Ctx) error {
	token := c.Get(contextField)
	c.Request().Header.Del(contextField)
	if ctx, ok := cs.byToken.Load(token); ok {
		c.SetContext(ctx.(context.Context))
	}
	return c.Next()
}
