package nethttp_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
)

// server serves h behind the Dedupe middleware on a real HTTP/1.1 server.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *throttle.Lock) {
	t.Helper()
	g, l := submitGuard(t)
	srv := httptest.NewServer(nethttp.Middleware(g, adaptertest.UserKey())(h))
	t.Cleanup(srv.Close)
	return srv, l
}

func post(t *testing.T, srv *httptest.Server, user string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/submit", nil)
	require.NoError(t, err)
	req.Header.Set(adaptertest.UserHeader, user)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}

// The handler can flush through the middleware: the client reads the first
// line before the handler writes the second.
func TestFlusher(t *testing.T) {
	got := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		f, ok := w.(http.Flusher)
		if !ok {
			_, _ = io.WriteString(w, "no flusher\n")
			return
		}
		f.Flush()
		select {
		case <-got:
			_, _ = io.WriteString(w, "second\n")
		case <-time.After(10 * time.Second):
			_, _ = io.WriteString(w, "client never saw the flushed line\n")
		}
	})
	resp := post(t, srv, "u1")
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "first\n", line, "first line")
	close(got)
	require.Equal(t, "second\n", readAll(t, br), "the rest")
}

// http.ResponseController reaches the server's writer through Unwrap.
func TestResponseController(t *testing.T) {
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		err := errors.Join(
			rc.SetReadDeadline(time.Now().Add(time.Minute)),
			rc.SetWriteDeadline(time.Now().Add(time.Minute)),
			rc.EnableFullDuplex(),
			rc.Flush(),
		)
		if err != nil {
			_, _ = io.WriteString(w, err.Error())
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	require.Equal(t, "ok", readAll(t, post(t, srv, "u1").Body), "body")
}

// A hijacked connection works, and counts as a success (the key is kept).
func TestHijacker(t *testing.T) {
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no hijacker", http.StatusInternalServerError)
			return
		}
		conn, rw, err := hj.Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		_ = rw.Flush()
	})
	require.Equal(t, "hijacked", readAll(t, post(t, srv, "u1").Body), "body")
	require.Equal(t, http.StatusTooManyRequests, post(t, srv, "u1").StatusCode, "after a hijacked success")
}

// Hijack on a writer that cannot (here a recorder; HTTP/2 alike) returns an
// error matching http.ErrNotSupported instead of panicking.
func TestHijackUnsupported(t *testing.T) {
	g, _ := submitGuard(t)
	var errs []error
	h := nethttp.Middleware(g, adaptertest.UserKey())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, err := w.(http.Hijacker).Hijack()
		errs = append(errs, err)
		_, _, err = http.NewResponseController(w).Hijack()
		errs = append(errs, err)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	adaptertest.Status(t, adaptertest.Serve(h, adaptertest.Submit("u1")), http.StatusInternalServerError)
	require.Len(t, errs, 2, "hijacks")
	for i, err := range errs {
		require.ErrorIs(t, err, http.ErrNotSupported, "hijack %d", i)
	}
}

// readerFromRecorder is a recorder that can ReadFrom, like the server's
// writer, and counts the calls.
type readerFromRecorder struct {
	*httptest.ResponseRecorder
	calls int
}

func (w *readerFromRecorder) ReadFrom(r io.Reader) (int64, error) {
	w.calls++
	return io.Copy(w.ResponseRecorder, r)
}

// io.Copy to the response reaches the server's ReadFrom (its sendfile
// path), and works on writers without one.
func TestReaderFrom(t *testing.T) {
	const body = "streamed body"
	copyHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(io.ReaderFrom); !ok {
			http.Error(w, "no ReaderFrom", http.StatusInternalServerError)
			return
		}
		// struct{ io.Reader } hides strings.Reader's WriteTo, which
		// io.Copy would prefer over the writer's ReadFrom.
		_, _ = io.Copy(w, struct{ io.Reader }{strings.NewReader(body)})
	})
	g, _ := submitGuard(t)
	h := nethttp.Middleware(g, adaptertest.UserKey())(copyHandler)

	rf := &readerFromRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rf, adaptertest.Submit("u1"))
	assert.Equal(t, 1, rf.calls, "ReadFrom calls")
	assert.Equal(t, body, rf.Body.String(), "body")
	assert.Equal(t, http.StatusOK, rf.Code, "status")
	rec := adaptertest.Serve(h, adaptertest.Submit("u2"))
	assert.Equal(t, body, rec.Body.String(), "without ReadFrom: body")
	assert.Equal(t, http.StatusOK, rec.Code, "without ReadFrom: status")
	// Both were successes: the keys are kept.
	adaptertest.Status(t, adaptertest.Serve(h, adaptertest.Submit("u1")), http.StatusTooManyRequests)

	srv, _ := server(t, copyHandler)
	require.Equal(t, body, readAll(t, post(t, srv, "u1").Body), "real server: body")
}

// The status is the first final one: 103 Early Hints before a 500 is a
// failure (released), a flush before any write is a 200 (kept).
func TestStatusRecorded(t *testing.T) {
	g, _ := submitGuard(t)
	h := nethttp.Middleware(g, adaptertest.UserKey())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Case") {
		case "hints":
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusInternalServerError)
			w.WriteHeader(http.StatusOK) // superfluous, ignored
		case "flush":
			w.(http.Flusher).Flush()
			w.WriteHeader(http.StatusInternalServerError) // too late
		}
	}))
	do := func(user, c string) int {
		r := adaptertest.Submit(user)
		r.Header.Set("X-Case", c)
		return adaptertest.Serve(h, r).Code
	}
	do("u1", "hints")
	require.Equal(t, http.StatusOK, do("u1", ""), "500 after 103 did not release the key")
	do("u2", "flush")
	require.Equal(t, http.StatusTooManyRequests, do("u2", ""), "a flushed (200) response released the key")
}
