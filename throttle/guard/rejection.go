package guard

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Reason says why a request was turned away, which the status alone does
// not: a stable label for logs, metrics and rejection handlers.
type Reason string

// The reasons; problem bodies link here for those a client must act on.
const (
	// ReasonContended: the key is held or the quota spent; the guard's
	// status (429, 409 for Exclusive).
	ReasonContended Reason = "contended"
	// ReasonBadKey: the key could not be built; 400, or the 4xx the key
	// function's error carries (413 for a body too long to hash). The
	// detail names what was missing or bad for a *keyfuncs.Error.
	ReasonBadKey Reason = "bad-key"
	// ReasonStoreUnavailable: the store failed and the limiter fails closed; 503.
	ReasonStoreUnavailable Reason = "store-unavailable"
	// ReasonCanceled: the request's context ended first; 503, for logs.
	ReasonCanceled Reason = "canceled"
	// ReasonBadCost: a Quota request's cost is out of range or could not
	// be worked out; 413 above Burst, else 400 or the cost function's 4xx.
	ReasonBadCost Reason = "bad-cost"
	// ReasonInFlight: a Replay key's first request still ran when the
	// duplicate's wait ended; 409, Retry-After 1 s: retry to get its response.
	ReasonInFlight Reason = "in-flight"
	// ReasonKeyReused: the Replay key (an Idempotency-Key) was used for a
	// request with another body; 422: use a new key for a new request.
	ReasonKeyReused Reason = "key-reused"
	// ReasonNotKept: a Replay key's first request succeeded but its
	// response was not kept (too large, or the store failed); 409 until
	// the key expires (Retry-After), and the request is not processed again.
	ReasonNotKept Reason = "not-kept"
	// ReasonBadRate: a Quota guard's rate function returned rates that
	// cannot be decided; 500, and the detail does not say more.
	ReasonBadRate Reason = "bad-rate"
)

// Rejection is the answer to a request that does not go ahead, which
// Write renders or an adapter's rejection handler answers its own way.
type Rejection struct {
	Status int
	Reason Reason
	// RetryAfter is how long to wait: the holder's remaining time, or
	// until a Quota allows the request; -1 for a key held without expiry.
	RetryAfter time.Duration
	Policy     string          // the limiter's name
	Decision   *store.Decision // the Quota decision that refused the request, if any
	// Detail explains the rejection to the client, naming no key, token,
	// address or internal error.
	Detail string
	// Err is the underlying error, for logs only: it may name keys.
	Err error

	g         *Guard           // that made it; nil for one made elsewhere
	replay    *response        // for a Replay duplicate
	plan      *plan            // a Quota's rates, when Decision is set,
	decisions []store.Decision // and every rate's decision when several
}

// Write answers the request as the adapters do by default: Retry-After and
// the RateLimit fields, and an RFC 9457 problem+json body.
func (rej *Rejection) Write(w http.ResponseWriter) {
	h := w.Header()
	rej.setHeaders(h)
	h["Content-Type"] = problemJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(rej.Status)
	_, _ = w.Write(rej.body()) //nolint:gosec // problem+json with nosniff; shared, so an io.Writer must not change it
}

var (
	problemJSON = []string{"application/problem+json"}
	noStore     = []string{"no-store"}
	noSniff     = []string{"nosniff"}
)

func (g *Guard) newRejection(status int, reason Reason, err error) *Rejection {
	rej := &Rejection{Status: status, Reason: reason, Policy: g.name, Err: err, g: g}
	rej.Detail = rej.detail()
	return rej
}

// setHeaders sets Retry-After and, for a Guard's rejection, the RateLimit
// fields (RateLimit only for ReasonContended).
func (rej *Rejection) setHeaders(h http.Header) {
	if secs := rej.retryAfter(); secs > 0 {
		h["Retry-After"] = retryAfterFields.get(secs)
	}
	if rej.Reason == ReasonContended {
		rej.setFields(h)
	} else if g := rej.g; g != nil && g.policyField != nil {
		h["Ratelimit-Policy"] = g.policyField
	}
	if g := rej.g; g != nil && g.legacy {
		rej.setLegacy(h)
	}
}

// setFields sets the RateLimit fields of a refused request.
func (rej *Rejection) setFields(h http.Header) {
	g := rej.g
	if g == nil {
		return
	}
	switch p := rej.quotaPlan(); {
	case p != nil && rej.Decision != nil:
		p.setFields(h, rej.Decision, rej.decisions)
	case g.policyField != nil:
		h["Ratelimit-Policy"] = g.policyField
		h["Ratelimit"] = g.rejectedFields.get(rej.retryAfter())
	}
}

// retryAfter is Retry-After in seconds, 0 for none.
func (rej *Rejection) retryAfter() int64 {
	switch {
	case rej.RetryAfter > 0:
		return seconds(rej.RetryAfter)
	case rej.RetryAfter < 0 && rej.g != nil:
		return seconds(rej.g.window)
	case rej.RetryAfter < 0 || rej.Reason == ReasonContended:
		return 1
	}
	return 0
}

// seconds returns d in whole seconds, rounded up, at least 1.
func seconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

const (
	quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	reasonDoc     = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#"
)

// problemTypes are documented types, as the idempotency-key draft asks.
var problemTypes = map[Reason]string{ReasonBadKey: reasonDoc + "ReasonBadKey", ReasonInFlight: reasonDoc + "ReasonInFlight",
	ReasonKeyReused: reasonDoc + "ReasonKeyReused", ReasonNotKept: reasonDoc + "ReasonNotKept"}

// body returns the problem+json body, shared for a Guard's unchanged
// answer to a duplicate.
func (rej *Rejection) body() []byte {
	if g := rej.g; g != nil && g.contendedBody != nil && rej.Reason == ReasonContended &&
		rej.Status == g.status && rej.Detail == g.contendedDetail && (rej.plan == nil || rej.plan == g.plan && rej.decisions == nil) {
		return g.contendedBody
	}
	return rej.buildBody()
}

func (rej *Rejection) buildBody() []byte {
	typ, documented := problemTypes[rej.Reason]
	switch {
	case !documented && rej.Status == http.StatusTooManyRequests:
		typ = quotaExceeded
	case !documented:
		typ = "about:blank"
	}
	title := cmp.Or(http.StatusText(rej.Status), "Error")
	b := append(make([]byte, 0, 256), `{"type":`...)
	b = strconv.AppendQuote(b, typ)
	b = strconv.AppendQuote(append(b, `,"title":`...), title)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(rej.Status), 10)
	b = strconv.AppendQuote(append(b, `,"detail":`...), cmp.Or(rej.Detail, rej.detail()))
	g := rej.g
	if typ == quotaExceeded && g != nil { // draft -11 names the policies exceeded
		b = append(b, `,"violated-policies":[`...)
		for i, name := range rej.violated() {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, name)
		}
		b = append(b, ']')
	}
	if documented && rej.Reason != ReasonBadKey && g != nil { // how long a retry gets the first response
		b = strconv.AppendInt(append(b, `,"retention-seconds":`...), seconds(g.window), 10)
	}
	return append(b, "}\n"...)
}

// quotaPlan is the plan of the rates that decided a Quota's rejection: its
// own, or, for one made elsewhere with a Decision, the guard's fixed one.
func (rej *Rejection) quotaPlan() *plan { return cmp.Or(rej.plan, rej.g.plan) }

// violated names the policies that refused the request.
func (rej *Rejection) violated() []string {
	switch p := rej.quotaPlan(); {
	case p != nil && rej.decisions != nil:
		return p.violated(rej.decisions)
	case p != nil:
		return p.names[:1]
	}
	return []string{rej.g.name}
}

func (rej *Rejection) detail() string {
	switch {
	case rej.Reason == ReasonContended:
		return contendedDetail(cmp.Or(rej.g, &Guard{}))
	case rej.Reason == ReasonBadKey:
		return badKeyDetail(rej)
	case rej.Reason == ReasonBadCost && rej.Status == http.StatusRequestEntityTooLarge:
		return "The request is too large: it costs more than the rate limit allows at once."
	}
	return cmp.Or(details[rej.Reason], "The request was not processed.")
}

var details = map[Reason]string{
	ReasonBadCost:          "The request's cost could not be worked out.",
	ReasonStoreUnavailable: "The request cannot be checked for duplicates or limits right now, so it was not processed. Retry shortly.",
	ReasonBadRate:          "The server's rate limit is misconfigured.",
	ReasonInFlight:         "A request with the same idempotency key is still being processed. Retry shortly to get its response.",
	ReasonKeyReused:        "The idempotency key was already used for a request with a different body. Use a new key for a new request.",
	ReasonNotKept: "A request with the same idempotency key was processed and succeeded, but its response was not kept. " +
		"It is not processed again until the key expires.",
}

// badKeyDetail names what was missing or bad. A keyfuncs.Error's Source and
// Reason are fixed texts, never the request's values: safe to show.
func badKeyDetail(rej *Rejection) string {
	var ke *keyfuncs.Error
	switch {
	case errors.As(rej.Err, &ke) && ke.Status == http.StatusRequestEntityTooLarge:
		return "The request body is too large to identify the request: " + ke.Source + ": " + ke.Reason + "."
	case errors.As(rej.Err, &ke):
		return "The request cannot be identified: " + ke.Source + ": " + ke.Reason + "."
	case rej.Status == http.StatusRequestEntityTooLarge:
		return "The request body is too large to identify the request."
	}
	return "The request lacks what is needed to identify it."
}

func contendedDetail(g *Guard) string {
	if g.countOnlyFailures {
		return "Too many failed attempts. Retry after the time Retry-After gives."
	}
	if g.holders > 1 {
		return "As many of the same requests as may run at once are already in progress. Retry after one finishes."
	}
	return cmp.Or(contendedDetails[g.mode], "The same request was received moments ago. Retry after the window ends.")
}

var contendedDetails = map[throttle.Mode]string{
	throttle.Exclusive: "The same request is already in progress. Retry after it finishes.",
	throttle.ModeQuota: "Too many requests. Retry after the time Retry-After gives.",
	throttle.ModeReplay: "The same request was received moments ago and its response cannot be repeated. " +
		"Retry after the window ends.",
}

// The draft-ietf-httpapi-ratelimit-headers-11 fields are one item: the
// policy's name (strconv.Quote makes the sf-string of a name throttle allows)
// with parameters, never pk, which would tell a client another's partition.
// RateLimit's t is the effective window: none for an Exclusive holder or a
// full Quota. Set before the handler runs, they understate what a request
// that then frees its key or is refunded leaves.

func policyField(g *Guard) string {
	b := strconv.AppendQuote(make([]byte, 0, 64), g.name)
	if g.mode == throttle.Exclusive {
		b = strconv.AppendInt(append(b, ";q="...), int64(g.holders), 10)
		return string(append(b, `;qu="concurrent-requests"`...))
	}
	b = strconv.AppendInt(append(b, ";q=1;w="...), seconds(g.window), 10)
	return string(b)
}

// limitField returns a RateLimit value: r, and t unless it is negative.
func limitField(name string, r int, t int64) string {
	b := strconv.AppendQuote(make([]byte, 0, 48), name)
	b = strconv.AppendInt(append(b, ";r="...), int64(r), 10)
	if t >= 0 {
		b = strconv.AppendInt(append(b, ";t="...), t, 10)
	}
	return string(b)
}

// fieldCache holds the header values of 0 to len(vals)-1, made by format
// on first use and shared: net/http only reads them, Header.Set replaces
// them and Header.Add's append copies them.
type fieldCache struct {
	vals   []atomic.Pointer[[]string]
	format func(n int64) string
}

func (c *fieldCache) get(n int64) []string {
	if n < 0 || n >= int64(len(c.vals)) {
		return []string{c.format(n)}
	}
	if v := c.vals[n].Load(); v != nil {
		return *v
	}
	v := []string{c.format(n)}
	c.vals[n].Store(&v)
	return v
}

var retryAfterFields = fieldCache{vals: make([]atomic.Pointer[[]string], 600),
	format: func(n int64) string { return strconv.FormatInt(n, 10) }}

func (g *Guard) initFields() {
	switch {
	case g.plan != nil:
		g.policyField = g.plan.policy
	case g.quota == nil:
		g.policyField = []string{policyField(g)}
	}
	t := int64(-1) // an Exclusive hold lasts as long as the work
	if g.mode != throttle.Exclusive {
		t = seconds(g.window)
	}
	g.heldField = []string{limitField(g.name, 0, t)}
	g.contendedDetail = contendedDetail(g)
	g.contendedBody = (&Rejection{Status: g.status, Reason: ReasonContended, Detail: g.contendedDetail, g: g}).buildBody()
	g.rejectedFields = fieldCache{vals: make([]atomic.Pointer[[]string], 301),
		format: func(t int64) string { return limitField(g.name, 0, t) }}
	g.placeFields = fieldCache{vals: make([]atomic.Pointer[[]string], g.holders+1),
		format: func(r int64) string { return limitField(g.name, int(r), -1) }}
}
