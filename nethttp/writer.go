package nethttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/go-throttle/throttle/throttle/guard"
)

// recorder is the ResponseWriter the guarded handler gets. It notes the
// status of the response (the first final WriteHeader, or 200 when the
// body or a flush starts the response) and otherwise passes everything
// through: it implements http.Flusher, http.Hijacker and io.ReaderFrom by
// delegating to the server's writer, and Unwrap lets
// http.ResponseController reach that writer for the rest. For the first
// request of a Replay key it also feeds the response to capture, which a
// flush or a hijack abandons.
type recorder struct {
	http.ResponseWriter
	status  int
	capture *guard.Capture
	// r and next are the request and the handler, for the guard's
	// Exchange methods.
	r    *http.Request
	next http.Handler
}

// recorders recycles recorders: one is made for every admitted request,
// and a pooled one spares an allocation on the hot path. A recorder goes
// back once its handler has returned, after which net/http forbids the
// handler to use its ResponseWriter (gin and echo recycle their contexts,
// and the writers in them, on the same contract).
var recorders = sync.Pool{New: func() any { return new(recorder) }}

// newRecorder returns a recorder of w for r on its way to next; free gives
// it back. It is the request's guard.Exchange, too.
func newRecorder(w http.ResponseWriter, r *http.Request, next http.Handler) *recorder {
	rec := recorders.Get().(*recorder)
	*rec = recorder{ResponseWriter: w, r: r, next: next}
	return rec
}

// exchange is a recorder seen as the request's guard.Exchange: a type of
// its own, so that the handler's ResponseWriter has no such methods.
type exchange recorder

// Request returns the request, for the guard.
func (x *exchange) Request() *http.Request { return x.r }

// Writer returns the server's writer, which the guard answers rejections on.
func (x *exchange) Writer() http.ResponseWriter { return x.ResponseWriter }

// Next serves r with the guarded handler, through the recorder, feeding c,
// and returns the status the client got.
func (x *exchange) Next(r *http.Request, c *guard.Capture) int {
	w := (*recorder)(x)
	w.capture = c
	w.next.ServeHTTP(w, r)
	return w.result()
}

// free puts w back into the pool, without the writer and capture it
// pointed to, which it must not keep alive.
func (w *recorder) free() {
	*w = recorder{}
	recorders.Put(w)
}

// result returns the status the client got: what the handler sent, or 200
// when it sent nothing (net/http then answers 200 with an empty body).
func (w *recorder) result() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *recorder) started() {
	if w.status == 0 {
		w.status = http.StatusOK
		w.capture.WriteHeader(w.Header(), http.StatusOK)
	}
}

// WriteHeader notes the first final status. 1xx informational responses
// (103 Early Hints) may precede it; 101 Switching Protocols is final.
func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		w.capture.WriteHeader(w.Header(), code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	w.started()
	w.capture.Write(b)
	return w.ResponseWriter.Write(b)
}

// ReadFrom lets io.Copy to the response use the server's sendfile/splice
// path when it has one.
func (w *recorder) ReadFrom(src io.Reader) (int64, error) {
	w.started()
	if w.capture != nil {
		// Through Write, so that the body is captured.
		return io.Copy(writerOnly{w}, src)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	// writerOnly hides this method from io.Copy, which would otherwise
	// call it again.
	return io.Copy(writerOnly{w.ResponseWriter}, src)
}

type writerOnly struct{ io.Writer }

// Flush sends buffered data to the client when the server's writer can.
func (w *recorder) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting failure; http.ResponseController.Flush
// prefers it, so that "not supported" reaches the caller.
func (w *recorder) FlushError() error {
	w.started()
	w.capture.Abandon()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over to the handler when the server's writer
// allows it (HTTP/1.x), and returns an error matching http.ErrNotSupported
// otherwise. A hijacked response with no status counts as 101 Switching
// Protocols, a success.
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.capture.Abandon()
		if w.status == 0 {
			w.status = http.StatusSwitchingProtocols
		}
	}
	return conn, rw, err
}

// Unwrap returns the server's writer, for http.ResponseController.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Push starts an HTTP/2 server push when the server's writer supports it,
// and returns http.ErrNotSupported otherwise.
func (w *recorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}
