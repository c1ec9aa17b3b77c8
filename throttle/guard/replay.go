package guard

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

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

// beginReplay is begin for a Replay, the body's fingerprint being fp: the
// key's first request goes ahead with its response captured; a duplicate
// gets the recorded response, or the rejection that says why not.
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
	// RetryAfter: how long the key is still held, for the RateLimit field
	// of now (see writeReplay).
	return &Rejection{Status: rec.resp.status, Policy: g.name, RetryAfter: untilExpiry(rec.expires), replay: rec.resp, g: g}
}

// recordRetry bounds the retries of a record while the store fails.
const recordRetry = 2 * time.Second

// record stores a successful first response, or the mark of a response not
// kept if the store finds it too large. A failing store is retried with
// backoff, then once a second in the background while the key is held:
// meanwhile its duplicates get 409, never a second run.
func (t *ticket) record(ctx context.Context) {
	expires := time.Now().Add(t.g.replay.Config().TTL) // Record holds the key for the TTL
	rec := encodeRecord(t.capture.recorded(), t.fingerprint, expires)
	notKept := false
	for pause := recordRetry / 32; ; pause *= 2 {
		err := t.lease.Record(ctx, rec)
		switch {
		case errors.Is(err, store.ErrInvalid) && !notKept:
			rec, notKept = encodeRecord(nil, t.fingerprint, expires), true
			continue
		case !errors.Is(err, throttle.ErrStore):
			return // recorded, or the key is gone
		case pause > recordRetry/2:
			go func(ctx context.Context, lease *throttle.Lease, rec []byte) {
				for lease.ValidFor() > time.Second {
					time.Sleep(time.Second)
					if err := lease.Record(ctx, rec); !errors.Is(err, throttle.ErrStore) {
						return
					}
				}
			}(context.WithoutCancel(ctx), t.lease, rec)
			return
		}
		time.Sleep(pause)
	}
}

// Capture copies the response of a Replay key's first request for its
// duplicates (see Guard.Serve); its methods do nothing on a nil Capture.
// One abandoned or that never saw a status is not recorded: the duplicates
// are turned away as in Dedupe.
type Capture struct {
	response
	abandoned bool
}

// recordedHeaders are the fields replayed: what describes the content and
// where it points; never Set-Cookie, the first sender's, nor the RateLimit
// fields, which a replay gets as of its own time (see writeReplay).
var recordedHeaders = map[string]bool{"Content-Type": true, "Location": true, "Cache-Control": true,
	"Content-Language": true}

// notReplayed are the fields a replay never repeats from a record, which
// older versions kept: the guard sets them as of the replay.
var notReplayed = map[string]bool{"Ratelimit": true, "Ratelimit-Policy": true, "Retry-After": true,
	"X-Ratelimit-Limit": true, "X-Ratelimit-Remaining": true, "X-Ratelimit-Reset": true}

// maxRecordedBody is the largest body recorded; the store may keep less.
const maxRecordedBody = 64 << 10

// WriteHeader notes the final status and the recorded fields of h as they
// are sent. Later calls and 1xx statuses are ignored, but 101 abandons.
func (c *Capture) WriteHeader(h http.Header, status int) {
	if c != nil && status == http.StatusSwitchingProtocols {
		c.abandoned = true
	}
	if c == nil || c.status != 0 || status < 200 {
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

func (c *Capture) recorded() *response {
	if c == nil || c.abandoned || c.status == 0 {
		return nil
	}
	return &c.response
}

type response struct {
	status int
	header http.Header
	body   []byte
}

var replayedField = []string{"true"}

func (r *response) write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		if !notReplayed[k] {
			h[k] = vs
		}
	}
	h["Idempotent-Replayed"] = replayedField
	if len(r.body) > 0 {
		h["Content-Length"] = []string{strconv.Itoa(len(r.body))}
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body) //nolint:gosec // the recorded response, as its handler sent it
}

// A record is what a Replay key's first request leaves for its duplicates:
// version and kind (kindUnrecorded: a response not kept), bytes; expires
// (the key's end, Unix ms, for Retry-After), uvarint; the fingerprint; then
// for kindResponse the status, uvarint, the count of header lines, uvarint,
// each line's name and value, and the body. Strings are a uvarint length
// and bytes. A record that does not parse is never answered with.
const (
	recordVersion  = 1
	kindResponse   = 1
	kindUnrecorded = 2
	// maxRecordHeaders bounds what a damaged record makes decode allocate.
	maxRecordHeaders = 256
)

type record struct {
	expires     time.Time
	fingerprint string
	resp        *response
}

var errBadRecord = errors.New("guard: malformed replay record")

// encodeRecord returns the record of resp (nil: a response not kept).
func encodeRecord(resp *response, fp string, expires time.Time) []byte {
	kind, n, lines := byte(kindUnrecorded), 16+len(fp), 0
	if resp != nil {
		kind, n = kindResponse, n+len(resp.body)+8
		for k, vs := range resp.header {
			for _, v := range vs {
				n, lines = n+len(k)+len(v)+4, lines+1
			}
		}
	}
	b := append(make([]byte, 0, n), recordVersion, kind)
	b = binary.AppendUvarint(b, uint64(max(expires.UnixMilli(), 0)))
	b = appendBytes(b, fp)
	if resp == nil {
		return b
	}
	b = binary.AppendUvarint(b, uint64(resp.status))
	b = binary.AppendUvarint(b, uint64(lines))
	for k, vs := range resp.header {
		for _, v := range vs {
			b = appendBytes(appendBytes(b, k), v)
		}
	}
	return append(b, resp.body...)
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeRecord never panics and allocates at most in proportion to len(b).
func decodeRecord(b []byte) (record, error) {
	if len(b) < 2 || b[0] != recordVersion || (b[1] != kindResponse && b[1] != kindUnrecorded) {
		return record{}, errBadRecord
	}
	d := decoder{b: b[2:]}
	ms := d.uvarint()
	rec := record{fingerprint: d.str(), expires: time.UnixMilli(int64(ms))}
	if d.err == nil && b[1] == kindResponse {
		rec.resp = d.response()
	}
	if d.err != nil || ms > 1<<62 || (b[1] == kindUnrecorded && len(d.b) != 0) {
		return record{}, errBadRecord
	}
	return rec, nil
}

func (d *decoder) response() *response {
	status, lines := d.uvarint(), d.uvarint()
	if d.err != nil || status < 100 || status > 999 || lines > maxRecordHeaders {
		d.err = errBadRecord
		return nil
	}
	resp := &response{status: int(status), header: make(http.Header, lines)}
	for range lines {
		k, v := d.str(), d.str()
		if d.err != nil || k == "" {
			d.err = errBadRecord
			return nil
		}
		resp.header[k] = append(resp.header[k], v)
	}
	resp.body = d.b
	return resp
}

// decoder reads a record's fields, keeping the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errBadRecord
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
