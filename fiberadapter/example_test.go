package fiberadapter_test

import (
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/gofiber/fiber/v3"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// One submission per user per 5 s: the same user's second submission is
// turned away with 429, and a request without a user is never throttled
// under a shared key.
func Example() {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	// The user header, else the client address: the key of the net/http,
	// gin and echo examples, so that they share locks on one Redis.
	key := keyfuncs.FirstOf(fiberadapter.Header("X-User-ID"), fiberadapter.RemoteIP())
	app := fiber.New()
	app.Post("/submit", fiberadapter.Middleware(guard.Lock(lock), key), func(c fiber.Ctx) error {
		return c.SendString("submitted\n")
	})

	for _, user := range []string{"42", "42", "7"} {
		r := httptest.NewRequest("POST", "/submit", nil)
		r.Header.Set("X-User-ID", user)
		res, err := app.Test(r)
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		fmt.Printf("user %s: %d %s, RateLimit: %s, Retry-After: %q\n", user, res.StatusCode,
			res.Header.Get("Content-Type"), res.Header.Get("RateLimit"), res.Header.Get("Retry-After"))
	}
	// Output:
	// user 42: 200 text/plain; charset=utf-8, RateLimit: "submit";r=0;t=5, Retry-After: ""
	// user 42: 429 application/problem+json, RateLimit: "submit";r=0;t=5, Retry-After: "5"
	// user 7: 200 text/plain; charset=utf-8, RateLimit: "submit";r=0;t=5, Retry-After: ""
}
