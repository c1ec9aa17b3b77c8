package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// A Replay answers a repeated POST with the first answer, marked
// Idempotent-Replayed, instead of placing the order again. The key is the
// user and the Idempotency-Key the client sends (or, without one, the
// body's hash); the same key with another body gets 422.
func Example_replay() {
	replay, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{
		Name: "orders",
		TTL:  24 * time.Hour, // how long a key's answer is replayed
	})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.Join(keyfuncs.Header("X-User-ID"), keyfuncs.IdempotencyKey(keyfuncs.BodyHash(1<<20)))
	var orders atomic.Int32
	place := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := orders.Add(1)
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", id))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`+"\n", id)
	})

	mux := http.NewServeMux()
	mux.Handle("POST /orders", nethttp.Middleware(guard.Replay(replay), key)(place))

	for _, body := range []string{`{"item":"book"}`, `{"item":"book"}`, `{"item":"lamp"}`} {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		req.Header.Set("X-User-ID", "42")
		req.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		line := fmt.Sprint(rec.Code, " ", rec.Header().Get("Location"), " ", rec.Header().Get("Idempotent-Replayed"))
		fmt.Println(strings.TrimSpace(line))
	}
	fmt.Println("orders placed:", orders.Load())
	// Output:
	// 201 /orders/1
	// 201 /orders/1 true
	// 422
	// orders placed: 1
}
