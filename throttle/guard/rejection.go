package guard

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
)

// Reason says why a request was turned away, which the status alone does
// not: a stable label for logs, metrics and rejection handlers.
type Reason = flow.Reason

// The reasons, with the status each gets; problem bodies link here for the
// four a client must act on.
const (
	ReasonContended        = flow.ReasonContended        // the guard's status: 429, or 409 for Exclusive
	ReasonStoreUnavailable = flow.ReasonStoreUnavailable // 503: the store failed and the limiter fails closed, or is full
	ReasonCanceled         = flow.ReasonCanceled         // 503, for logs: the request's context ended first
	ReasonBadCost          = flow.ReasonBadCost          // 413 above Burst, else 400 or the 4xx of the cost function's error
	ReasonBadRate          = flow.ReasonBadRate          // 500: a rate function's rates cannot be decided
	ReasonReplayed         = flow.ReasonReplayed         // a Replay duplicate, answered with the recorded response
	ReasonOverloaded       = flow.ReasonOverloaded       // 503: an Overload guard shed the request

	// ReasonBadKey: the key could not be built; 400, or the 4xx the key
	// function's error carries (413 for a body too long to hash). The
	// detail names what was missing or bad for a *keyfuncs.Error.
	ReasonBadKey = flow.ReasonBadKey
	// ReasonInFlight: a Replay key's first request still ran when the
	// duplicate's wait ended; 409, Retry-After 1 s: retry to get its response.
	ReasonInFlight = flow.ReasonInFlight
	// ReasonKeyReused: the Replay key (an Idempotency-Key) was used for a
	// request with another body; 422: use a new key for a new request.
	ReasonKeyReused = flow.ReasonKeyReused
	// ReasonNotKept: a Replay key's first request succeeded but its
	// response was not kept (too large, or the store failed); 409 until
	// the key expires (Retry-After), and the request is not processed again.
	ReasonNotKept = flow.ReasonNotKept
)

// Rejection is the answer to a request that does not go ahead, which
// Write renders or an adapter's rejection handler answers its own way.
// Its RetryAfter (whole seconds) is what the Retry-After field says, and
// its Limits what the RateLimit fields say.
type Rejection struct {
	flow.Refusal
	Status int
	Policy string // the limiter's name
	// Detail explains the rejection to the client, naming no key, token,
	// address or internal error.
	Detail string

	g *Guard // that made it; nil for one made elsewhere
}

// Rejection returns the HTTP answer to ref, a refusal of g's job.
func (g *Guard) Rejection(ref flow.Refusal) Rejection {
	rej := Rejection{Refusal: ref}
	g.reject(&rej)
	return rej
}

// reject fills in the HTTP answer to rej.Refusal.
func (g *Guard) reject(rej *Rejection) {
	rej.Policy, rej.g = g.name, g
	switch rej.Reason {
	case ReasonReplayed:
		rej.Status, rej.Detail = rej.Replayed.Status, ""
		return
	case ReasonContended:
		rej.Status, rej.Detail = g.status, g.contendedDetail
		return
	case ReasonBadKey, ReasonBadCost:
		rej.Status = http.StatusBadRequest
		var hs interface{ HTTPStatus() int }
		if errors.As(rej.Err, &hs) && hs.HTTPStatus() >= 400 && hs.HTTPStatus() < 500 {
			rej.Status = hs.HTTPStatus()
		}
	default:
		rej.Status = statuses[rej.Reason]
	}
	rej.Detail = rej.detail()
}

var statuses = map[Reason]int{ReasonStoreUnavailable: 503, ReasonCanceled: 503, ReasonOverloaded: 503, ReasonInFlight: 409,
	ReasonKeyReused: 422, ReasonNotKept: 409, ReasonBadRate: 500}

// Write answers the request with Render: as the adapters do by default.
func (rej *Rejection) Write(w http.ResponseWriter) {
	status, body := rej.Render(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // problem+json with nosniff, or a recorded response
}

// Render sets rej's header fields on h and returns the status and body to
// send: Retry-After, the RateLimit fields and an RFC 9457 problem+json
// body, or, for a Replay duplicate, the recorded response. The body is
// shared: send it, never change it.
func (rej *Rejection) Render(h map[string][]string) (status int, body []byte) {
	if rej.Reason == ReasonReplayed && rej.Replayed != nil {
		return rej.replay(h)
	}
	rej.SetHeader(h)
	h["Content-Type"] = problemJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	return rej.Status, rej.body()
}

var (
	problemJSON = []string{"application/problem+json"}
	noStore     = []string{"no-store"}
	noSniff     = []string{"nosniff"}
)

// SetHeader sets rej's Retry-After and RateLimit fields on h: what an
// adapter sets before its own rejection handler runs.
func (rej *Rejection) SetHeader(h map[string][]string) {
	if rej.RetryAfter > 0 {
		h["Retry-After"] = smallInt(seconds(rej.RetryAfter))
	}
	if rej.g != nil {
		rej.g.setLimits(h, &rej.Limits)
	}
}

const (
	quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	reasonDoc     = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#"
)

// problemTypes are documented types, as the idempotency-key draft asks.
var problemTypes = map[Reason]string{ReasonBadKey: reasonDoc + "ReasonBadKey", ReasonInFlight: reasonDoc + "ReasonInFlight",
	ReasonKeyReused: reasonDoc + "ReasonKeyReused", ReasonNotKept: reasonDoc + "ReasonNotKept"}

// body returns the problem+json body, shared for a Guard's unchanged
// answer to a duplicate and for the unchanged answer to a shed request.
func (rej *Rejection) body() []byte {
	if rej.Reason == ReasonOverloaded && rej.Status == http.StatusServiceUnavailable && rej.Detail == overloadedDetail {
		return overloadedBody
	}
	violated := rej.Violated()
	if g := rej.g; g != nil && rej.Reason == ReasonContended && rej.Status == g.status &&
		rej.Detail == g.contendedDetail && len(violated) == 1 && violated[0] == g.violated {
		return g.contendedBody
	}
	return rej.buildBody(violated)
}

// overloadedBody is the body of every Overload guard's answer to a shed
// request, built once: under overload most answers are this one, and
// shedding must cost little.
var overloadedBody = (&Rejection{Refusal: flow.Refusal{Reason: ReasonOverloaded}, Status: http.StatusServiceUnavailable,
	Detail: overloadedDetail}).buildBody(nil)

func (rej *Rejection) buildBody(violated []string) []byte {
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
		for i, name := range violated {
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

func (rej *Rejection) detail() string {
	switch {
	case rej.Reason == ReasonContended && rej.g != nil:
		return rej.g.contended()
	case rej.Reason == ReasonBadKey:
		return badKeyDetail(rej)
	case rej.Reason == ReasonBadCost && rej.Status == http.StatusRequestEntityTooLarge:
		return "The request is too large: it costs more than the rate limit allows at once."
	}
	return cmp.Or(details[rej.Reason], "The request was not processed.")
}

const overloadedDetail = "The server has more requests than it can answer in time right now. Retry after the time in Retry-After."

var details = map[Reason]string{
	ReasonContended:        "The same request was received moments ago. Retry after the window ends.",
	ReasonBadCost:          "The request's cost could not be worked out.",
	ReasonStoreUnavailable: "The request cannot be checked for duplicates or limits right now, so it was not processed. Retry shortly.",
	ReasonBadRate:          "The server's rate limit is misconfigured.",
	ReasonOverloaded:       overloadedDetail,
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

// contended is the detail of a request whose key is held or quota spent.
func (g *Guard) contended() string {
	switch {
	case g.onlyFailures:
		return "Too many failed attempts. Retry after the time Retry-After gives."
	case g.holders > 1:
		return "As many of the same requests as may run at once are already in progress. Retry after one finishes."
	}
	return cmp.Or(contendedDetails[g.mode], details[ReasonContended])
}

var contendedDetails = map[throttle.Mode]string{
	throttle.Exclusive: "The same request is already in progress. Retry after it finishes.",
	throttle.ModeQuota: "Too many requests. Retry after the time Retry-After gives.",
	throttle.ModeReplay: "The same request was received moments ago and its response cannot be repeated. " +
		"Retry after the window ends.",
}
