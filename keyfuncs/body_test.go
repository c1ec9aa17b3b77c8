package keyfuncs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
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
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// closeTracker records whether the original body was closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func bodyReq(body io.Reader, contentLength int64) (*http.Request, *closeTracker) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	ct := &closeTracker{Reader: body}
	r.Body = ct
	r.ContentLength = contentLength
	return r, ct
}

// checkRestored reads r.Body to the end, compares it with want, and checks
// that closing it closes the original.
func checkRestored(t *testing.T, r *http.Request, ct *closeTracker, want []byte) {
	t.Helper()
	got, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored body: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	if err := r.Body.Close(); err != nil || !ct.closed {
		t.Fatalf("closing the restored body: %v, original closed %v", err, ct.closed)
	}
}

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
			if err != nil || got != sha(tt.body) {
				t.Fatalf("got %q, %v; want %q", got, err, sha(tt.body))
			}
			checkRestored(t, r, ct, tt.body)
		})
	}
}

func TestBodyHashDistinguishesBodies(t *testing.T) {
	f := BodyHash(1 << 10)
	a, _ := f(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("a")))
	b, _ := f(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("b")))
	a2, _ := f(httptest.NewRequest(http.MethodPost, "/", strings.NewReader("a")))
	if a == b || a != a2 {
		t.Fatalf("a=%q b=%q a again=%q", a, b, a2)
	}
}

func TestBodyHashNoBody(t *testing.T) {
	for _, body := range []io.ReadCloser{nil, http.NoBody} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Body = body
		got, err := BodyHash(10)(r)
		if err != nil || got != sha(nil) {
			t.Fatalf("%v: got %q, %v", body, got, err)
		}
		if r.Body != body {
			t.Fatalf("body replaced")
		}
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
		if src.n != 0 {
			t.Fatalf("read %d bytes although Content-Length was over the limit", src.n)
		}
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
	if string(got) != "partial" || !errors.Is(rerr, boom) {
		t.Fatalf("restored body: %q, %v", got, rerr)
	}
	_ = r.Body.Close()
	if !ct.closed {
		t.Fatal("original body not closed")
	}
}

func TestBodyHashHandlerSeesBody(t *testing.T) {
	// Through a real server, the handler reads the body after the key func.
	var seen []byte
	var key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if key, err = BodyHash(1 << 20)(r); err != nil {
			http.Error(w, err.Error(), err.(*Error).HTTPStatus())
			return
		}
		seen, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("payload-"), 10_000)
	resp, err := http.Post(srv.URL, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(seen, body) || key != sha(body) {
		t.Fatalf("status %d, handler saw %d bytes, key %q", resp.StatusCode, len(seen), key)
	}
}

func TestBodyHashNegativePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	BodyHash(-1)
}

// rawExpect sends a POST with "Expect: 100-continue" and the given framing
// header to srv over a raw connection, holding body back until the server
// asks for it. It returns whether 100 Continue came before the final answer,
// and that answer's status.
func rawExpect(t *testing.T, srv *httptest.Server, framing, body string) (continued bool, status int) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	head := "POST / HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\n" + framing + "\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusContinue {
		continued = true
		if _, err := io.WriteString(conn, body); err != nil {
			t.Fatal(err)
		}
		if resp, err = http.ReadResponse(br, nil); err != nil {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	return continued, resp.StatusCode
}

// With "Expect: 100-continue", net/http sends 100 Continue when the body is
// first read: BodyHash refuses a Content-Length over the limit before that,
// and reads (so asks for) any other body, which the handler then sees whole.
func TestBodyHashExpectContinue(t *testing.T) {
	const limit = 16
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := BodyHash(limit)(r)
		if err != nil {
			w.WriteHeader(err.(*Error).HTTPStatus())
			return
		}
		got, err := io.ReadAll(r.Body)
		if err != nil || key != sha(got) || string(got) != "small" {
			t.Errorf("handler read %q, %v; key %q", got, err, key)
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
		continued, status := rawExpect(t, srv, tc.framing, tc.body)
		if continued != tc.continued || status != tc.status {
			t.Errorf("%s: 100 Continue sent %v, then %d; want %v, then %d", tc.name, continued, status, tc.continued, tc.status)
		}
	}
}
