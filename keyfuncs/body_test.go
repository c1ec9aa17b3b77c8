package keyfuncs

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBodyHash(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		cl   int64
	}{
		{"empty", nil, 0},
		{"small", []byte(`{"amount":10}`), -1},
		{"with content length", []byte(`{"amount":10}`), 13},
		{"exactly the limit", bytes.Repeat([]byte{'a'}, 64), 64},
		{"binary and separators", []byte("\x00\xff:{}%\r\n"), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ct := bodyReq(iotest.HalfReader(bytes.NewReader(tt.body)), tt.cl)
			got, err := BodyHash(64)(r)
			require.NoError(t, err)
			assert.Equal(t, sha(tt.body), got)
			checkRestored(t, r, ct, tt.body)
		})
	}
}

func TestBodyHashDistinguishesBodies(t *testing.T) {
	f := BodyHash(1 << 10)
	a, _ := f(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("a")))
	b, _ := f(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("b")))
	a2, _ := f(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("a")))
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, a2)
}

func TestBodyHashNoBody(t *testing.T) {
	for _, body := range []io.ReadCloser{nil, http.NoBody} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Body = body
		got, err := BodyHash(10)(r)
		require.NoError(t, err)
		assert.Equal(t, sha(nil), got)
		assert.Equal(t, body, r.Body, "body replaced")
	}
}

func TestBodyHashTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	t.Run("streamed", func(t *testing.T) {
		r, ct := bodyReq(bytes.NewReader(big), -1)
		_, err := BodyHash(1000)(r)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body", "0123456789")
		checkRestored(t, r, ct, big)
	})
	t.Run("one byte over", func(t *testing.T) {
		r, ct := bodyReq(iotest.OneByteReader(bytes.NewReader(big[:1001])), -1)
		_, err := BodyHash(1000)(r)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
		checkRestored(t, r, ct, big[:1001])
	})
	t.Run("content length says so", func(t *testing.T) {
		src := &countingReader{r: bytes.NewReader(big)}
		r, ct := bodyReq(src, int64(len(big)))
		_, err := BodyHash(1000)(r)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
		require.Zero(t, src.n, "read although Content-Length was over the limit")
		checkRestored(t, r, ct, big)
	})
	t.Run("zero limit", func(t *testing.T) {
		r, ct := bodyReq(strings.NewReader("x"), -1)
		_, err := BodyHash(0)(r)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
		checkRestored(t, r, ct, []byte("x"))
	})
	t.Run("MaxBytesReader in front", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(big))
		r.ContentLength = -1
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 100)
		_, err := BodyHash(1000)(r)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestBodyHashReadError(t *testing.T) {
	boom := errors.New("connection reset by peer at 10.0.0.1")
	r, ct := bodyReq(io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom)), -1)
	_, err := BodyHash(1000)(r)
	wantErr(t, err, http.StatusBadRequest, "body", "10.0.0.1", "partial")
	// The handler still sees what was read, then the same error.
	got, rerr := io.ReadAll(r.Body)
	assert.Equal(t, "partial", string(got))
	require.ErrorIs(t, rerr, boom)
	require.NoError(t, r.Body.Close())
	assert.True(t, ct.closed, "original body not closed")
}

func TestBodyHashHandlerSeesBody(t *testing.T) {
	// Through a real server, the handler reads the body after the key func.
	var seen []byte
	var key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if key, err = BodyHash(1 << 20)(r); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		seen, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("payload-"), 10_000)
	resp, err := http.Post(srv.URL, "application/octet-stream", bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, bytes.Equal(seen, body), "the handler saw %d bytes of %d", len(seen), len(body))
	assert.Equal(t, sha(body), key)
}

func TestBodyHashNegativePanics(t *testing.T) {
	assert.Panics(t, func() { BodyHash(-1) })
}

// rawExpect sends a POST with "Expect: 100-continue" and the given framing
// header to srv over a raw connection, holding body back until the server
// asks for it. It returns whether 100 Continue came before the final answer,
// and that answer's status.
func rawExpect(t *testing.T, srv *httptest.Server, framing, body string) (continued bool, status int) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	head := "POST / HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\n" + framing + "\r\n\r\n"
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusContinue {
		continued = true
		_, err = io.WriteString(conn, body)
		require.NoError(t, err)
		resp, err = http.ReadResponse(br, nil)
		require.NoError(t, err)
	}
	require.NoError(t, resp.Body.Close())
	return continued, resp.StatusCode
}

// With "Expect: 100-continue", net/http sends 100 Continue when the body is
// first read: BodyHash refuses a Content-Length over the limit before that,
// and reads (so asks for) any other body, which the handler then sees whole.
func TestBodyHashExpectContinue(t *testing.T) {
	const limit = 16
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := BodyHash(limit)(r)
		var ke *Error
		if errors.As(err, &ke) {
			w.WriteHeader(ke.HTTPStatus())
			return
		}
		got, err := io.ReadAll(r.Body)
		if err != nil || key != sha(got) || string(got) != "small" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	long := strings.Repeat("x", limit+1)
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(long), long)
	for _, tc := range []struct {
		name, framing, body string
		continued           bool
		status              int
	}{
		{"Content-Length over the limit", fmt.Sprintf("Content-Length: %d", len(long)), long, false, http.StatusRequestEntityTooLarge},
		{"within the limit", "Content-Length: 5", "small", true, http.StatusOK},
		// Without a length, only reading tells.
		{"chunked, over the limit", "Transfer-Encoding: chunked", chunked, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			continued, status := rawExpect(t, srv, tc.framing, tc.body)
			assert.Equal(t, tc.continued, continued, "100 Continue sent")
			assert.Equal(t, tc.status, status)
		})
	}
}

// The hash is a fingerprint of the body: 32 bytes, the same for the same
// body, also read back from a restored body.
func TestBodyHashFingerprint(t *testing.T) {
	bodies := [][]byte{nil, []byte(`{"amount":10}`), []byte(`{"amount":11}`), []byte("\x00\xff"), bytes.Repeat([]byte("a"), 64)}
	seen := map[string]int{}
	for i, body := range bodies {
		r, ct := bodyReq(iotest.HalfReader(bytes.NewReader(body)), -1)
		got, err := BodyHash(64)(r)
		require.NoError(t, err)
		require.Equal(t, sha(body), got)
		raw, err := base64.RawURLEncoding.DecodeString(got)
		require.NoError(t, err)
		require.Len(t, raw, 32)
		require.Len(t, got, 43)
		require.NotContains(t, seen, got, "body %d shares a fingerprint", i)
		seen[got] = i
		checkRestored(t, r, ct, body)

		// The same body again gives the same fingerprint, also when read
		// back from the restored body of an earlier pass.
		r2, _ := bodyReq(bytes.NewReader(body), int64(len(body)))
		again, _ := BodyHash(64)(r2)
		require.Equal(t, got, again)
		again, _ = BodyHash(64)(r2)
		require.Equal(t, got, again, "restored")
	}

	for _, cl := range []int64{-1, 65} {
		body := bytes.Repeat([]byte("b"), 65)
		r, ct := bodyReq(bytes.NewReader(body), cl)
		_, err := BodyHash(64)(r)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
		checkRestored(t, r, ct, body)
	}
}
