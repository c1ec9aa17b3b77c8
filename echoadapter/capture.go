package echoadapter

import (
	"bufio"
	"net"
	"net/http"

	"github.com/go-throttle/throttle/throttle/guard"
)

// captureWriter is the echo.Response's Writer while the first request of a
// Replay key runs: it feeds the response to the ticket's Capture. echo's
// Response sends the header in WriteHeader, after the handler set it, so
// the header is captured there.
type captureWriter struct {
	http.ResponseWriter
	capture *guard.Capture
}

func (w *captureWriter) WriteHeader(code int) {
	w.capture.WriteHeader(w.Header(), code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.capture.Write(b)
	return w.ResponseWriter.Write(b)
}

// Flush streams the response, which can then no longer be replayed whole.
func (w *captureWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting failure, for http.ResponseController.
func (w *captureWriter) FlushError() error {
	w.capture.Abandon()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection to the handler: nothing to replay.
func (w *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.capture.Abandon()
	}
	return conn, rw, err
}

// Unwrap returns the writer below, for http.ResponseController.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
