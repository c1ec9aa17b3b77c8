package echoadapter

import (
	"bufio"
	"net"
	"net/http"

	"github.com/go-throttle/throttle/throttle/guard"
)

// captureWriter is the echo.Response's Writer while a Replay key's first
// request runs; echo sends the header in WriteHeader.
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

func (w *captureWriter) Flush() { _ = w.FlushError() }

func (w *captureWriter) FlushError() error {
	w.capture.Abandon()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.capture.Abandon()
	}
	return conn, rw, err
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
