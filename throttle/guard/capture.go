package guard

import (
	"net/http"
	"strconv"
)

// Response is the first response of a Replay policy's key, as recorded for
// its duplicates: its status, the headers the Recording allows, and its
// body.
type Response struct {
	// Status is the recorded status code: a success, since a failed
	// response (WithFailed) is never recorded.
	Status int
	// Header holds the recorded header fields, canonical names; only those
	// the Recording allows.
	Header http.Header
	// Body is the recorded body, at most Recording.MaxBody bytes.
	Body []byte
}

// replayedField is the value of Idempotent-Replayed on a replayed response.
var replayedField = []string{"true"}

// Write sends the recorded response to w: its headers (replacing any of
// the same names w already has), Idempotent-Replayed: true (so that
// clients and logs can tell a replay from a first answer), its status and
// its body.
func (r *Response) Write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.Header {
		h[k] = vs
	}
	h["Idempotent-Replayed"] = replayedField
	if len(r.Body) > 0 {
		h["Content-Length"] = []string{strconv.Itoa(len(r.Body))}
	}
	w.WriteHeader(r.Status)
	_, _ = w.Write(r.Body)
}

// Recording says what of a Replay policy's first response is kept for its
// duplicates. The zero Recording keeps the default headers and up to 64 KiB
// of body.
type Recording struct {
	// Headers lists the header fields recorded and replayed; nil means
	// defaultRecordedHeaders. Set-Cookie is never recorded unless
	// SetCookie is set, even when listed: a cookie set for the first
	// request (a session, say) would otherwise be handed to whoever sends
	// a duplicate under the same key.
	Headers []string
	// SetCookie records Set-Cookie fields, when Headers lists Set-Cookie
	// or is nil. Only for cookies that every sender of the key may have.
	SetCookie bool
	// MaxBody is the largest body recorded, in bytes; default
	// defaultMaxRecordedBody. A response with a longer body is not
	// recorded (its duplicates are turned away with the policy's
	// status, as Dedupe's are), and neither is one the handler
	// flushed or hijacked: its client has it already, in pieces that were
	// never all in hand. The store may have a smaller limit (see
	// memstore.WithMaxRecordBytes).
	MaxBody int
}

// defaultMaxRecordedBody is Recording.MaxBody's default: 64 KiB, enough
// for any API answer that names what was created, small enough to keep
// many in Redis.
const defaultMaxRecordedBody = 64 << 10

// defaultRecordedHeaders are the header fields recorded when
// Recording.Headers is nil: those that describe the response's content and
// where it points, plus the RateLimit fields. Set-Cookie is not among them.
var defaultRecordedHeaders = []string{"Content-Type", "Location", "Cache-Control", "Content-Language",
	"Ratelimit", "Ratelimit-Policy"}

// recording is a Recording made ready for use: canonical names in a set.
type recording struct {
	headers map[string]bool
	maxBody int
}

func newRecording(r Recording) recording {
	names := r.Headers
	if names == nil {
		names = defaultRecordedHeaders
		if r.SetCookie {
			names = append(names[:len(names):len(names)], "Set-Cookie")
		}
	}
	rc := recording{headers: make(map[string]bool, len(names)), maxBody: r.MaxBody}
	for _, n := range names {
		n = http.CanonicalHeaderKey(n)
		if n == "Set-Cookie" && !r.SetCookie {
			continue
		}
		rc.headers[n] = true
	}
	if rc.maxBody <= 0 {
		rc.maxBody = defaultMaxRecordedBody
	}
	return rc
}

// Capture copies a Replay request's response as the handler writes it, to
// be recorded for the key's duplicates. Adapters feed it from their
// response writer (see Exchange.Next): the header when the status is sent,
// every body write, and Abandon when the handler flushes or hijacks. A
// capture that never got a status is not recorded: the duplicates are then
// turned away as in Dedupe. Serve hands a nil Capture to requests that
// record nothing, and every method of a nil Capture does nothing, so an
// adapter calls them unconditionally. It is not safe for concurrent use, as
// a response writer is not.
type Capture struct {
	rc        *recording
	status    int
	header    http.Header
	body      []byte
	abandoned bool
}

// WriteHeader notes the response's final status and copies the recorded
// fields of h, as they are when the status is sent. Later calls, and
// informational (1xx) statuses, are ignored, except 101 Switching
// Protocols, which abandons the capture.
func (c *Capture) WriteHeader(h http.Header, status int) {
	if c == nil || c.status != 0 || status < 200 {
		if c != nil && status == http.StatusSwitchingProtocols {
			c.abandoned = true
		}
		return
	}
	c.status = status
	for k, vs := range h {
		if c.rc.headers[k] {
			if c.header == nil {
				c.header = make(http.Header, len(c.rc.headers))
			}
			c.header[k] = append([]string(nil), vs...)
		}
	}
}

// Write copies p, a piece of the body. A body longer than the Recording's
// MaxBody abandons the capture and drops what it held.
func (c *Capture) Write(p []byte) {
	if c == nil || c.abandoned {
		return
	}
	if len(c.body)+len(p) > c.rc.maxBody {
		c.Abandon()
		return
	}
	c.body = append(c.body, p...)
}

// Abandon gives up the capture: the response is streamed (flushed),
// hijacked, or too large. The request's duplicates are then turned away as
// in Dedupe instead of being replayed.
func (c *Capture) Abandon() {
	if c == nil {
		return
	}
	c.abandoned = true
	c.body = nil
}

// response returns what was captured, or nil when the capture was
// abandoned or never saw the response's status.
func (c *Capture) response() *Response {
	if c == nil || c.abandoned || c.status == 0 {
		// status 0: the adapter never fed the capture, so what the
		// client got is unknown; recording an empty answer would be a lie.
		return nil
	}
	return &Response{Status: c.status, Header: c.header, Body: c.body}
}
