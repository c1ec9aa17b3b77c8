package nethttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/go-throttle/throttle/throttle/guard"
)

// recorder is the guarded handler's ResponseWriter: it notes the status
// and feeds a Replay's capture on the way to the server's writer.
type recorder struct {
	http.ResponseWriter
	status  int
	capture *guard.Capture
}

// recorders recycles recorders, each freed once its handler returned,
// after which net/http forbids the handler to use its ResponseWriter.
var recorders = sync.Pool{New: func() any { return new(recorder) }}

// note notes the first final status: 1xx responses (103 Early Hints) may
// precede it, but 101 Switching Protocols is final; a write or flush with
// none sent is 200.
func (w *recorder) note(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		w.capture.WriteHeader(w.Header(), code)
	}
}

func (w *recorder) WriteHeader(code int) {
	w.note(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	w.note(http.StatusOK)
	w.capture.Write(b)
	return w.ResponseWriter.Write(b)
}

// ReadFrom lets io.Copy use the server's sendfile path.
func (w *recorder) ReadFrom(src io.Reader) (int64, error) {
	w.note(http.StatusOK)
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok && w.capture == nil {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{w}, src)
}

type writerOnly struct{ io.Writer }

func (w *recorder) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting failure, for http.ResponseController.
func (w *recorder) FlushError() error {
	w.note(http.StatusOK)
	w.capture.Abandon()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over where the server's writer can; a
// response hijacked with no status counts as 101, a success.
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.capture.Abandon()
		w.note(http.StatusSwitchingProtocols)
	}
	return conn, rw, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}
