package guard

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// beginReplay is begin for a Replay, whose request body has fingerprint fp.
// The key's first request goes ahead with its response captured; a
// duplicate gets the recorded response (Idempotent-Replayed: true), 422 if
// its body differs, 409 if the response was not kept or the first request
// was still running when the duplicate's wait ended.
func (g *Guard) beginReplay(ctx context.Context, t *ticket, id, fp string) (context.Context, *Rejection) {
	lease, rec, err := g.replay.Claim(ctx, id)
	switch {
	case err != nil:
		rej := g.rejection(err)
		if rej.Reason == ReasonContended && !g.dryRun {
			rej.Status, rej.Reason, rej.RetryAfter = http.StatusConflict, ReasonInFlight, time.Second
			rej.Detail = rej.detail()
		}
		return ctx, g.reject(t, rej)
	case rec != nil:
		return ctx, g.replayed(rec, fp)
	}
	t.g = g
	if lease == nil { // failed open
		return ctx, nil
	}
	t.lease, t.capture, t.fingerprint = lease, &Capture{}, fp
	if g.fence {
		ctx = throttle.WithLease(ctx, lease)
	}
	return ctx, nil
}

// replayed returns the answer to a duplicate that found the record b.
func (g *Guard) replayed(b []byte, fp string) *Rejection {
	rec, err := decodeRecord(b)
	switch {
	case err != nil: // another version's, or damaged: never answer with it
		rej := g.newRejection(g.status, ReasonContended, err)
		rej.RetryAfter = time.Second
		return rej
	case fp != "" && rec.fingerprint != "" && fp != rec.fingerprint:
		return g.newRejection(http.StatusUnprocessableEntity, ReasonKeyReused, nil)
	case rec.resp == nil:
		rej := g.newRejection(http.StatusConflict, ReasonNotKept, nil)
		rej.RetryAfter = max(time.Until(rec.expires), time.Millisecond)
		return rej
	}
	return &Rejection{Status: rec.resp.status, Policy: g.name, replay: rec.resp, g: g}
}

// recordRetry bounds how long a record is retried while the store fails.
const recordRetry = 2 * time.Second

// record stores a successful first response as its Capture saw it, or, if
// the store refuses it as too large, the mark of a response not kept. A
// failing store is asked again with backoff for up to recordRetry, then
// once a second in the background while the key is held, which it stays
// meanwhile: its duplicates get 409, never a second run.
func (t *ticket) record(ctx context.Context) {
	expires := time.Now().Add(t.lease.ValidFor())
	rec := encodeRecord(t.capture.response(), t.fingerprint, expires)
	notKept := false
	for pause := recordRetry / 32; ; pause *= 2 {
		err := t.lease.Record(ctx, rec)
		switch {
		case errors.Is(err, throttle.ErrInvalid) && !notKept:
			rec, notKept = encodeRecord(nil, t.fingerprint, expires), true
			continue
		case !errors.Is(err, throttle.ErrStore):
			return // recorded, or the key is gone
		case pause > recordRetry/2:
			go recordLater(context.WithoutCancel(ctx), t.lease, rec)
			return
		}
		time.Sleep(pause)
	}
}

func recordLater(ctx context.Context, lease *throttle.Lease, rec []byte) {
	for lease.ValidFor() > time.Second {
		time.Sleep(time.Second)
		if err := lease.Record(ctx, rec); !errors.Is(err, throttle.ErrStore) {
			return
		}
	}
}

// Capture copies the response of a Replay key's first request, for its
// duplicates; see Exchange.Next. Its methods do nothing on a nil Capture,
// so that adapters call them unconditionally. A capture that never saw a
// status, or was abandoned, is not recorded: the duplicates are then
// turned away as in Dedupe.
type Capture struct {
	status    int
	header    http.Header
	body      []byte
	abandoned bool
}

// recordedHeaders are the fields recorded and replayed: what describes the
// content and where it points. Never Set-Cookie: a duplicate's sender must
// not get the first sender's cookies.
var recordedHeaders = map[string]bool{"Content-Type": true, "Location": true, "Cache-Control": true,
	"Content-Language": true, "Ratelimit": true, "Ratelimit-Policy": true}

// maxRecordedBody is the largest body recorded; the store may keep less.
const maxRecordedBody = 64 << 10

// WriteHeader notes the final status and the recorded fields of h as they
// are sent. Later calls and 1xx statuses are ignored, but 101 abandons.
func (c *Capture) WriteHeader(h http.Header, status int) {
	if c == nil || c.status != 0 || status < 200 {
		if c != nil && status == http.StatusSwitchingProtocols {
			c.abandoned = true
		}
		return
	}
	c.status = status
	for k, vs := range h {
		if recordedHeaders[k] {
			if c.header == nil {
				c.header = make(http.Header, len(recordedHeaders))
			}
			c.header[k] = append([]string(nil), vs...)
		}
	}
}

// Write copies a piece of the body; a body over 64 KiB abandons.
func (c *Capture) Write(p []byte) {
	if c == nil || c.abandoned {
		return
	}
	if len(c.body)+len(p) > maxRecordedBody {
		c.Abandon()
		return
	}
	c.body = append(c.body, p...)
}

// Abandon gives the capture up: the response was flushed or hijacked.
func (c *Capture) Abandon() {
	if c != nil {
		c.abandoned, c.body = true, nil
	}
}

func (c *Capture) response() *response {
	if c == nil || c.abandoned || c.status == 0 {
		return nil
	}
	return &response{status: c.status, header: c.header, body: c.body}
}

// response is a recorded response.
type response struct {
	status int
	header http.Header
	body   []byte
}

var replayedField = []string{"true"}

// write sends the response, marked Idempotent-Replayed.
func (r *response) write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = vs
	}
	h["Idempotent-Replayed"] = replayedField
	if len(r.body) > 0 {
		h["Content-Length"] = []string{strconv.Itoa(len(r.body))}
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}
