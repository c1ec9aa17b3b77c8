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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
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
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	req := fmt.Sprintf("POST /submit HTTP/1.1\r\nHost: test\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", len(body))
	for _, h := range header {
		req += h + "\r\n"
	}
	_, err = io.WriteString(conn, req+"\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "reading the first answer")
	if resp.StatusCode == http.StatusContinue {
		continued = true
		_, err = io.WriteString(conn, body)
		require.NoError(t, err)
		resp, err = http.ReadResponse(br, nil)
		require.NoError(t, err, "reading the answer after 100 Continue")
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return continued, resp.StatusCode
}

// expectServer serves the middleware for key in front of a handler that
// reads the whole body and answers 201, and checks that it saw body.
func expectServer(t *testing.T, key keyfuncs.Func, body string) *httptest.Server {
	t.Helper()
	g, _ := submitGuard(t)
	srv := httptest.NewServer(nethttp.Middleware(g, key)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		assert.NoError(t, err, "handler reading the body")
		assert.Equal(t, body, string(got), "the body the handler read")
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
		require.Equal(t, c.continued, continued, "request %d (%q): 100 Continue sent", i+1, c.header)
		require.Equal(t, c.status, status, "request %d (%q): status", i+1, c.header)
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
