package guard

import (
	"strconv"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
)

// The RateLimit fields follow draft-ietf-httpapi-ratelimit-headers-11
// (May 2026). Both are Structured Field lists (RFC 9651) of one item: the
// policy's name as a String, with parameters. Policy names are printable
// ASCII without '"' or '\' (throttle.New checks), so strconv.Quote gives
// exactly the Structured Field String.
//
// RateLimit-Policy says what the policy allows: q, the quota; w, its
// window in whole seconds; qu, the unit when it is not requests. Dedupe and
// Cooldown allow one request per Window (q=1;w=Window). Exclusive allows
// one request at a time (q=1;qu="concurrent-requests", no window). Quota
// allows Limit per Window, and says its Burst in the vendor parameter
// throttle-burst when it is not Limit. No partition key (pk) is sent: the
// key names the user, and a hash of it would still let one client tell
// another's partition.
//
// RateLimit says what the client has now: r, the available quota, and t,
// the effective window of -11: the seconds within which the client can use
// no more than r. (Draft -10 had t as the time until the quota reset; -11
// made it a promise about r, which is what a GCRA can keep: until the next
// unit refills, r is all there is.) A holder of a Dedupe or Cooldown key
// has r=0 for t=Window; a turned-away request r=0 for t=Retry-After, so
// Retry-After never points before the end of the effective window, as -11
// asks; a Quota request has r=Remaining for t=the time until one more
// request refills. t is omitted where nothing refills at a known time (an
// Exclusive holder, a full quota).
//
// The fields are set before the handler runs, from what is known then: a
// Dedupe request whose handler fails still says r=0 although its key is
// released when it returns, and a success under CountOnlyFailures says r
// before its refund. Both only understate what the client may send.

// policyField returns the RateLimit-Policy value of p.
func policyField(p *policy) string {
	b := make([]byte, 0, 64)
	b = strconv.AppendQuote(b, p.name)
	switch p.mode {
	case throttle.Exclusive:
		return string(append(b, `;q=1;qu="concurrent-requests"`...))
	case throttle.ModeQuota:
		b = append(b, ";q="...)
		b = strconv.AppendInt(b, int64(p.rate.Limit), 10)
	default:
		b = append(b, ";q=1"...)
	}
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, seconds(p.window), 10)
	if p.mode == throttle.ModeQuota && p.rate.Burst != p.rate.Limit {
		b = append(b, ";throttle-burst="...)
		b = strconv.AppendInt(b, int64(p.rate.Burst), 10)
	}
	return string(b)
}

// limitField returns a RateLimit value: name with r and, unless t is
// negative, t.
func limitField(name string, r int, t int64) string {
	b := make([]byte, 0, 48)
	b = strconv.AppendQuote(b, name)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, int64(r), 10)
	if t >= 0 {
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, t, 10)
	}
	return string(b)
}

// quotaLimitField returns the RateLimit value for a Quota decision.
func quotaLimitField(p *policy, d *throttle.Decision) string {
	return limitField(p.name, d.Remaining, refillSeconds(p, d))
}

// refillSeconds is the t of a Quota decision's RateLimit value: the
// seconds until one more request refills, or -1 when the quota is full.
func refillSeconds(p *policy, d *throttle.Decision) int64 {
	if r := storekit.NextRefill(p.rate, *d); r > 0 {
		return seconds(r)
	}
	return -1
}
