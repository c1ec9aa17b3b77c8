package ginadapter_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// A double submission within the lock's 5 s TTL is turned away with 429.
func Example() {
	gin.SetMode(gin.ReleaseMode)
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	r := gin.New()
	r.POST("/submit", ginadapter.Middleware(guard.Lock(lock), key), func(c *gin.Context) {
		c.JSON(http.StatusCreated, gin.H{"ok": true})
	})

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.Header.Set("X-User-ID", "42")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	}
	// Output:
	// 201 application/json; charset=utf-8
	// 429 application/problem+json
}

// A key can be built from what gin knows: here the user an authentication
// middleware stored with c.Set, per route pattern.
func ExampleMiddleware_context() {
	gin.SetMode(gin.ReleaseMode)
	lock, _ := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "orders"})
	auth := func(c *gin.Context) { c.Set("user", 42) }
	key := keyfuncs.Join(ginadapter.Value("user"), ginadapter.FullPath())

	r := gin.New()
	r.POST("/orders/:id", auth, ginadapter.Middleware(guard.Lock(lock), key), func(c *gin.Context) {
		c.Status(http.StatusCreated)
	})

	for _, path := range []string{"/orders/1", "/orders/2"} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		fmt.Println(path, rec.Code)
	}
	// Output:
	// /orders/1 201
	// /orders/2 429
}

// ClientIP refuses gin's default engine, which believes X-Forwarded-For
// from any peer; after SetTrustedProxies(nil) (clients connect directly) a
// client forging that header is still known by its own address.
func ExampleClientIP() {
	gin.SetMode(gin.ReleaseMode)
	lock, _ := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})

	r := gin.New()
	if _, err := ginadapter.ClientIP(r); err != nil {
		fmt.Println("default engine refused")
	}
	if err := r.SetTrustedProxies(nil); err != nil { // or your proxies' addresses
		panic(err)
	}
	key, err := ginadapter.ClientIP(r)
	if err != nil {
		panic(err)
	}
	r.POST("/submit", ginadapter.Middleware(guard.Lock(lock), key), func(c *gin.Context) {
		c.Status(http.StatusCreated)
	})

	for _, forged := range []string{"198.51.100.1", "198.51.100.2"} {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.RemoteAddr = "203.0.113.7:1234"
		req.Header.Set("X-Forwarded-For", forged)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// default engine refused
	// 201
	// 429
}
