package nethttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/go-throttle/throttle/throttle/guard"
)

// recorder is the ResponseWriter the guarded handler gets: it notes the
// status (the first final WriteHeader, or 200 when the body or a flush
// starts the response), feeds a Replay's capture, and passes the rest
// through to the server's writer.
type recorder struct {
	http.ResponseWriter
	status  int
	capture *guard.Capture
}

// recorders recycles recorders, each freed once its handler returned,
// after which net/http forbids the handler to use its ResponseWriter.
var recorders = sync.Pool{New: func() any { return new(recorder) }}

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

// ReadFrom lets io.Copy use the server's sendfile path.
func (w *recorder) ReadFrom(src io.Reader) (int64, error) {
	w.started()
	if w.capture != nil {
		return io.Copy(writerOnly{w}, src)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, src)
}

type writerOnly struct{ io.Writer }

func (w *recorder) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting failure, for http.ResponseController.
func (w *recorder) FlushError() error {
	w.started()
	w.capture.Abandon()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over where the server's writer can; a
// response hijacked with no status counts as 101, a success.
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

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}
