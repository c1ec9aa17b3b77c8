package ginadapter

import (
	"bufio"
	"net"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/throttle/guard"
)

// captureWriter is c.Writer while a Replay key's first request runs. gin
// sends the header lazily, so it is captured at the first body write, or
// when the chain returns without one.
type captureWriter struct {
	gin.ResponseWriter
	capture *guard.Capture
}

func (w *captureWriter) sent() { w.capture.WriteHeader(w.Header(), w.Status()) }

func (w *captureWriter) Write(b []byte) (int, error) {
	w.sent()
	w.capture.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) WriteString(s string) (int, error) {
	w.sent()
	w.capture.Write([]byte(s))
	return w.ResponseWriter.WriteString(s)
}

func (w *captureWriter) WriteHeaderNow() {
	w.sent()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *captureWriter) Flush() {
	w.capture.Abandon()
	w.ResponseWriter.Flush()
}

func (w *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := w.ResponseWriter.Hijack()
	if err == nil {
		w.capture.Abandon()
	}
	return conn, rw, err
}
