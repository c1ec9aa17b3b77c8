package guard

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/flow"
)

// Capture copies the response of a Replay key's first request for its
// duplicates (see Guard.Serve); its methods do nothing on a nil Capture.
// One abandoned or that never saw a status is not recorded: the duplicates
// are turned away with ReasonNotKept.
type Capture struct {
	flow.Answer
	abandoned bool
}

// recordedHeaders are the fields replayed: what describes the content and
// where it points; never Set-Cookie, the first sender's, nor the RateLimit
// fields, which a replay gets as of its own time.
var recordedHeaders = []string{"Content-Type", "Location", "Cache-Control", "Content-Language"}

// notReplayed are the fields a replay never repeats from a record, which
// older versions kept: the guard sets them as of the replay.
var notReplayed = map[string]bool{"Ratelimit": true, "Ratelimit-Policy": true, "Retry-After": true,
	"X-Ratelimit-Limit": true, "X-Ratelimit-Remaining": true, "X-Ratelimit-Reset": true}

// maxRecordedBody is the largest body recorded; the store may keep less.
const maxRecordedBody = 64 << 10

// WriteHeader notes the final status and the recorded fields of h as they
// are sent. Later calls and 1xx statuses are ignored, but 101 abandons.
func (c *Capture) WriteHeader(h map[string][]string, status int) {
	if c != nil && status == http.StatusSwitchingProtocols {
		c.abandoned = true
	}
	if c == nil || c.Status != 0 || status < 200 {
		return
	}
	c.Status = status
	for _, k := range recordedHeaders {
		if vs := h[k]; len(vs) > 0 {
			if c.Header == nil {
				c.Header = make(map[string][]string, len(recordedHeaders))
			}
			c.Header[k] = append([]string(nil), vs...)
		}
	}
}

// Write copies a piece of the body; a body over 64 KiB abandons.
func (c *Capture) Write(p []byte) {
	if c == nil || c.abandoned {
		return
	}
	if len(c.Body)+len(p) > maxRecordedBody {
		c.Abandon()
		return
	}
	c.Body = append(c.Body, p...)
}

// Abandon gives the capture up: the response was flushed or hijacked.
func (c *Capture) Abandon() {
	if c != nil {
		c.abandoned, c.Body = true, nil
	}
}

func (c *Capture) answer() *flow.Answer {
	if c == nil || c.abandoned || c.Status == 0 {
		return nil
	}
	return &c.Answer
}

var replayedField = []string{"true"}

// replay sets the fields of a Replay duplicate's answer on h, and returns
// its status and body: the recorded response under the RateLimit fields
// of now, never the recorded ones.
func (rej *Rejection) replay(h map[string][]string) (int, []byte) {
	rej.g.setLimits(h, &rej.Limits)
	a := rej.Replayed
	for k, vs := range a.Header {
		if !notReplayed[k] {
			h[k] = vs
		}
	}
	h["Idempotent-Replayed"] = replayedField
	if len(a.Body) > 0 {
		h["Content-Length"] = []string{strconv.Itoa(len(a.Body))}
	}
	return a.Status, a.Body
}

// routePath is the path of a route: a net/http ServeMux pattern without
// its method and host ("POST example.com/orders/{id}": "/orders/{id}"); a
// gin or echo route as it is.
func routePath(pattern string) string {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		pattern = strings.TrimLeft(pattern[i+1:], " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:]
	}
	return pattern
}

// hashBody gives a longer body 413 rather than comparing it in part.
var hashBody = keyfuncs.BodyHash(1 << 20)

// idempotencyFingerprint is a Replay's fingerprint: the body's hash under an
// Idempotency-Key, so that a key reused for another body gets 422 rather
// than the first answer; "" without one, as a key of the body is one already.
func idempotencyFingerprint(r *http.Request) (string, error) {
	if len(r.Header["Idempotency-Key"]) == 0 {
		return "", nil
	}
	return hashBody(r)
}
