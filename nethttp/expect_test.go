package nethttp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
)

// expectContinue sends POST /submit with "Expect: 100-continue", the given
// header lines and body to srv over a raw connection, and holds the body
// back until the server asks for it, as a client does. It returns whether
// the server sent 100 Continue before its final answer, and that answer's
// status. (net/http sends 100 Continue when the handler first reads the
// body.)
func expectContinue(t *testing.T, srv *httptest.Server, body string, header ...string) (continued bool, status int) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf("POST /submit HTTP/1.1\r\nHost: test\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", len(body))
	for _, h := range header {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the first answer: %v", err)
	}
	if resp.StatusCode == http.StatusContinue {
		continued = true
		if _, err := io.WriteString(conn, body); err != nil {
			t.Fatal(err)
		}
		if resp, err = http.ReadResponse(br, nil); err != nil {
			t.Fatalf("reading the answer after 100 Continue: %v", err)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return continued, resp.StatusCode
}

// expectServer serves the middleware for key in front of a handler that
// reads the whole body and answers 201, and checks that it saw body.
func expectServer(t *testing.T, key keyfuncs.Func, body string) *httptest.Server {
	t.Helper()
	l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
	srv := httptest.NewServer(nethttp.Middleware(l, key)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		if err != nil || string(got) != body {
			t.Errorf("handler read %q, %v; want %q", got, err, body)
		}
		w.WriteHeader(http.StatusCreated)
	})))
	t.Cleanup(srv.Close)
	return srv
}

type expectCase struct {
	header    []string
	continued bool
	status    int
}

func checkExpect(t *testing.T, srv *httptest.Server, body string, cases ...expectCase) {
	t.Helper()
	for i, c := range cases {
		continued, status := expectContinue(t, srv, body, c.header...)
		if continued != c.continued || status != c.status {
			t.Fatalf("request %d (%q): 100 Continue sent %v, then %d; want %v, then %d",
				i+1, c.header, continued, status, c.continued, c.status)
		}
	}
}

// With "Expect: 100-continue", BodyHash asks for the body only when the key
// needs it: a request the headers already decide is answered without
// 100 Continue.
func TestBodyHashExpectContinue(t *testing.T) {
	const body = `{"amount":10}`

	// The body is the identity: it must be read, the duplicate's too, before
	// the duplicate can be recognised.
	t.Run("keyed on the body", func(t *testing.T) {
		srv := expectServer(t, keyfuncs.BodyHash(1<<10), body)
		checkExpect(t, srv, body,
			expectCase{continued: true, status: http.StatusCreated},
			expectCase{continued: true, status: http.StatusTooManyRequests})
	})

	// A Content-Length over the limit is refused from the headers.
	t.Run("Content-Length over the limit", func(t *testing.T) {
		srv := expectServer(t, keyfuncs.BodyHash(4), body)
		checkExpect(t, srv, body, expectCase{continued: false, status: http.StatusRequestEntityTooLarge})
	})

	// An idempotency key in the headers spares the body: the duplicate is
	// turned away without being asked for it, and only a request without
	// the header is keyed on its body.
	t.Run("FirstOf a header and BodyHash", func(t *testing.T) {
		srv := expectServer(t, keyfuncs.FirstOf(keyfuncs.Header("Idempotency-Key"), keyfuncs.BodyHash(1<<10)), body)
		checkExpect(t, srv, body,
			expectCase{header: []string{"Idempotency-Key: k1"}, continued: true, status: http.StatusCreated},
			expectCase{header: []string{"Idempotency-Key: k1"}, continued: false, status: http.StatusTooManyRequests},
			expectCase{continued: true, status: http.StatusCreated})
	})

	// With BodyHash last in a Join, a request that lacks another part of
	// its key is refused before its body is asked for.
	t.Run("Join with BodyHash last", func(t *testing.T) {
		srv := expectServer(t, keyfuncs.Join(keyfuncs.Header(adaptertest.UserHeader), keyfuncs.BodyHash(1<<10)), body)
		checkExpect(t, srv, body,
			expectCase{continued: false, status: http.StatusBadRequest},
			expectCase{header: []string{adaptertest.UserHeader + ": u1"}, continued: true, status: http.StatusCreated},
			expectCase{header: []string{adaptertest.UserHeader + ": u1"}, continued: true, status: http.StatusTooManyRequests},
			expectCase{header: []string{adaptertest.UserHeader + ": u2"}, continued: true, status: http.StatusCreated})
	})

}
