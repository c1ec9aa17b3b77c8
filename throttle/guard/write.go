package guard

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
)

// quotaExceeded is the RFC 9457 problem type registered by IANA for a
// request that exceeds a quota; 429 rejections use it.
const quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// The problem types of a Replay policy's 409 and 422 answers. The
// idempotency-key draft asks for a link to documentation in these answers;
// the type URI is that link, to the reason's documentation.
const (
	inFlightType  = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonInFlight"
	keyReusedType = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonKeyReused"
	// badKeyType documents a request whose key could not be built: the
	// draft asks that a request lacking a required Idempotency-Key be
	// answered with a link to documentation.
	badKeyType = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonBadKey"
	// notKeptType documents a duplicate whose original was processed but
	// whose response was not kept.
	notKeptType = "https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonNotKept"
)

// problemType returns the problem "type" member for a rejection.
func problemType(rej *Rejection) string {
	switch {
	case rej.Reason == ReasonInFlight:
		return inFlightType
	case rej.Reason == ReasonKeyReused:
		return keyReusedType
	case rej.Reason == ReasonBadKey:
		return badKeyType
	case rej.Reason == ReasonNotKept:
		return notKeptType
	case rej.Status == http.StatusTooManyRequests:
		return quotaExceeded
	}
	return "about:blank"
}

// Detail returns the problem body's human-readable explanation of a
// rejection, for frameworks that render rejections as their own error type
// (an echo.HTTPError, a gRPC status message). It names no key, token,
// address or internal error, so it is safe to show the client.
func Detail(rej *Rejection) string {
	switch rej.Reason {
	case ReasonContended:
		return contendedDetail(rej.policy())
	case ReasonBadKey:
		return badKeyDetail(rej)
	case ReasonBadCost:
		if rej.Status == http.StatusRequestEntityTooLarge {
			return "The request is too large: it costs more than the rate limit allows at once."
		}
		return "The request's cost could not be worked out."
	}
	if d, ok := details[rej.Reason]; ok {
		return d
	}
	return "The request was not processed."
}

// details are the fixed explanations of the other reasons.
var details = map[Reason]string{
	ReasonStoreUnavailable: "Rate limiting is temporarily unavailable. Retry shortly.",
	ReasonInFlight:         "A request with the same idempotency key is still being processed. Retry shortly to get its response.",
	ReasonKeyReused:        "The idempotency key was already used for a request with a different body. Use a new key for a new request.",
	ReasonNotKept: "A request with the same idempotency key was processed and succeeded, but its response was not kept. " +
		"It is not processed again until the key expires.",
}

// contendedDetail explains a request turned away for its key or quota.
func contendedDetail(p *policy) string {
	switch {
	case p.mode == throttle.Exclusive:
		return "The same request is already in progress. Retry after it finishes."
	case p.mode == throttle.ModeQuota && p.countOnlyFailures:
		return "Too many failed attempts. Retry after the time Retry-After gives."
	case p.mode == throttle.ModeQuota:
		return "Too many requests. Retry after the time Retry-After gives."
	case p.mode == throttle.ModeReplay:
		return "The same request was received moments ago and its response cannot be repeated. Retry after the window ends."
	}
	return "The same request was received moments ago. Retry after the window ends."
}

// badKeyDetail explains a request that could not be identified. A
// keyfuncs.Error's Source and Reason are fixed texts that never hold the
// request's values: safe to name for the client, who learns which value to
// send or fix.
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

// seconds returns d in whole seconds, rounded up, at least 1: the form of
// Retry-After (RFC 9110 section 10.2.3) and of the RateLimit "t" and "w"
// parameters.
func seconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// retryAfter returns the seconds a client should wait, or 0 when the
// rejection has nothing to wait for (a bad key). A key held without expiry
// (RetryAfter -1) is reported as one TTL of the policy.
func retryAfter(rej *Rejection) int64 {
	switch {
	case rej.RetryAfter > 0:
		return seconds(rej.RetryAfter)
	case rej.RetryAfter < 0:
		return seconds(rej.policy().window)
	case rej.Reason == ReasonContended:
		return 1
	}
	return 0
}

// Header values shared by every problem response; net/http only reads them.
// The header maps below are written with canonical keys directly
// ("Ratelimit-Policy" is the canonical form of RateLimit-Policy), which
// spares the key canonicalisation of Header.Set on every response.
var (
	problemJSON = []string{"application/problem+json"}
	noStore     = []string{"no-store"}
	noSniff     = []string{"nosniff"}
)

// SetHeaders sets Retry-After and the RateLimit-Policy and RateLimit
// fields of draft-ietf-httpapi-ratelimit-headers-11 (Serve sets them on
// admitted requests too), so that a rejection handler writing its own body
// still tells clients when to retry. A duplicate within a 5 s window, 3 s
// before it ends, gets:
//
//	Retry-After: 3
//	RateLimit-Policy: "submit";q=1;w=5
//	RateLimit: "submit";r=0;t=3
//
// A Quota of 10 per minute turning away its 11th request gets r=0 and t
// equal to Retry-After (about 6 s). Exclusive policies limit concurrency,
// not a rate, so they say qu="concurrent-requests" and give no window.
// RateLimit is set only when the request was turned away by its quota or
// key; a rejection for another reason (a bad key, a store outage) says
// nothing about the client's quota and gets RateLimit-Policy alone.
func SetHeaders(h http.Header, rej *Rejection) {
	if secs := retryAfter(rej); secs > 0 {
		h["Retry-After"] = retryAfterFields.get(secs)
	}
	p := rej.policy()
	if p.name == "" {
		return
	}
	g := rej.cached()
	if g != nil {
		h["Ratelimit-Policy"] = g.policyField
	} else {
		h["Ratelimit-Policy"] = []string{policyField(p)}
	}
	if rej.Reason == ReasonContended {
		h["Ratelimit"] = rejectedLimit(rej, g)
	}
}

// rejectedLimit returns the RateLimit field of a request turned away for
// its key or quota, from g's cache when g is rej.cached().
func rejectedLimit(rej *Rejection, g *Guard) []string {
	switch {
	case g != nil && rej.Decision == nil:
		return g.rejectedFields.get(retryAfter(rej))
	case g != nil && g.quotaFields != nil:
		return g.quotaField(rej.Decision)
	}
	return []string{rejectedLimitField(rej)}
}

// rejectedLimitField returns the RateLimit value of a request turned away
// for its key or quota.
func rejectedLimitField(rej *Rejection) string {
	if rej.Decision != nil {
		return quotaLimitField(rej.policy(), rej.Decision)
	}
	return limitField(rej.policy().name, 0, retryAfter(rej))
}

// buildBody returns the RFC 9457 problem+json document for a rejection.
func buildBody(rej *Rejection) []byte {
	b := make([]byte, 0, 256)
	typ := problemType(rej)
	b = append(b, `{"type":`...)
	b = strconv.AppendQuote(b, typ)
	b = append(b, `,"title":`...)
	b = strconv.AppendQuote(b, title(rej.Status))
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(rej.Status), 10)
	b = append(b, `,"detail":`...)
	b = strconv.AppendQuote(b, Detail(rej))
	if typ == quotaExceeded && rej.policy().name != "" {
		// quota-exceeded: draft -11 names the policies exceeded.
		b = append(b, `,"violated-policies":[`...)
		b = strconv.AppendQuote(b, rej.policy().name)
		b = append(b, ']')
	}
	if rej.Reason == ReasonInFlight || rej.Reason == ReasonKeyReused || rej.Reason == ReasonNotKept {
		// How long a key's first response is kept: the client may
		// retry with the same key within it and get that response.
		b = append(b, `,"retention-seconds":`...)
		b = strconv.AppendInt(b, seconds(rej.policy().window), 10)
	}
	return append(b, "}\n"...)
}

// title returns the problem title for a status: its reason phrase.
func title(status int) string {
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error"
}

// Write answers a rejected request the way every adapter does by default:
// the SetHeaders fields, Content-Type application/problem+json,
// Cache-Control no-store and X-Content-Type-Options nosniff, Status, and
// Body. A rejection carrying a Replay is answered with that response
// instead (Response.Write). An adapter whose framework has no
// http.ResponseWriter can usually give it one over its own context in a
// few lines (see the package example).
func Write(w http.ResponseWriter, rej *Rejection) {
	if rej.Replay != nil {
		rej.Replay.Write(w)
		return
	}
	h := w.Header()
	SetHeaders(h, rej)
	h["Content-Type"] = problemJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(rej.Status)
	_, _ = w.Write(body(rej)) // an io.Writer must not change or keep it
}
