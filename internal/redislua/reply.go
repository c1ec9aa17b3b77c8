package redislua

import (
	"fmt"
	"math"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// TTLCeiling is the largest time.Duration of whole milliseconds (about 292
// years), where Millis and Remaining saturate. Redis takes far longer PX
// and PEXPIRE values, so every TTL a time.Duration can express is one Redis
// accepts once rounded.
const TTLCeiling = math.MaxInt64 / time.Millisecond * time.Millisecond

// Millis rounds a positive duration up to whole milliseconds, the
// resolution of PX and PEXPIRE, saturating at TTLCeiling.
func Millis(d time.Duration) int64 {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return int64(min(ms, TTLCeiling/time.Millisecond))
}

// Remaining turns a PTTL reply into store.Grant.Remaining: -1 for a key
// without expiry, and at least 1ms otherwise (a key that expired between
// the SET and the PTTL, PTTL -2, is reported free in 1ms), saturating at
// TTLCeiling.
func Remaining(pttlMillis int64) time.Duration {
	switch {
	case pttlMillis == -1:
		return -1
	case pttlMillis < 1:
		return time.Millisecond
	case pttlMillis > int64(TTLCeiling/time.Millisecond):
		return TTLCeiling
	}
	return time.Duration(pttlMillis) * time.Millisecond
}

// Outcome decodes a reply of the release (release true), extend or record
// script; ok is false for a reply the script never gives.
func Outcome(n int64, release bool) (out store.Outcome, ok bool) {
	switch n {
	case OK:
		return store.OK, true
	case HeldByOther:
		return store.HeldByOther, true
	case Gone:
		return store.Gone, true
	case StillHeld:
		return store.StillHeld, release
	}
	return 0, false
}

// Decision decodes the GCRA script's reply v (see gcra.lua): the reset R
// when allowed, -(R+1) when refused; t is the emission interval, in
// microseconds like R.
func Decision(v, t, burst, cost int64) store.Decision {
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	tau := t * burst
	allowed := v >= 0
	reset := v
	if !allowed {
		reset = -v - 1
	}
	d := store.Decision{Allowed: allowed, Remaining: int(max(tau-reset, 0) / t), ResetAfter: us(reset)}
	if !allowed {
		d.RetryAfter = us(reset + cost*t - tau)
	}
	return d
}

// FenceField is the hash field of a reentrant lock that keeps its fence
// (acquire.lua); tokens made by store.NewToken never contain ':', so it
// cannot clash with one, and CheckRequest refuses it as a token.
const FenceField = ":fence"

// CheckRequest checks the arguments every Redis store call takes, and
// names the store (pkg) in its error, which matches store.ErrInvalid.
func CheckRequest(pkg, key, token string, ttl time.Duration) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: %s: empty key", store.ErrInvalid, pkg)
	case token == "":
		return fmt.Errorf("%w: %s: empty token", store.ErrInvalid, pkg)
	case token == FenceField:
		return fmt.Errorf("%w: %s: token %q is reserved", store.ErrInvalid, pkg, token)
	case ttl <= 0:
		return fmt.Errorf("%w: %s: ttl %v is not positive", store.ErrInvalid, pkg, ttl)
	}
	return nil
}

// GCRACall is what a store needs to decide a quota request with the GCRA
// scripts: which script, and the arguments in its unit.
type GCRACall struct {
	// T is the emission interval in microseconds, the unit of the
	// scripts' replies: Decision's t.
	T int64
	// Millis is true when T is a whole number of milliseconds: then
	// GCRAMillis decides, otherwise GCRA. memstore reads its clock at
	// millisecond resolution for the same rates, so that it decides as
	// the script does.
	Millis bool
	// Interval is T in the script's unit (ARGV[1]).
	Interval int64
	// Now is the test clock's time in the script's unit (ARGV[4]), or 0
	// when the server's clock decides.
	Now int64
}

// Charge makes the round trips of one quota decision and returns the
// script's reply (see Decision). A charge (cost above 0) on a
// whole-millisecond interval, on the server's clock, may first take the
// new-key step when first is set: setNX(px) sends SET key "" PX px NX,
// which charges a key that does not exist exactly as GCRAMillis would (its
// TAT, the expiry, cost intervals from now; the charge always fits,
// store.Rate.Check bounding cost by the burst), and reports whether it
// did. Otherwise, or when the key exists, script runs the script: a second
// round trip in that case. returning learns, from either, whether the key
// existed, which is what first should be chosen by (see Share).
func (c GCRACall) Charge(cost int, returning *Share, first bool,
	setNX func(px int64) (charged bool, err error), script func() (int64, error)) (int64, error) {
	step := c.Millis && c.Now == 0 && cost > 0
	newKey := int64(cost) * c.T // the reply for a key without time left
	if step && first {
		charged, err := setNX(int64(cost) * c.Interval) // Interval is in ms
		returning.Observe(err == nil && !charged)
		switch {
		case err != nil:
			return 0, err
		case charged:
			return newKey, nil
		}
	}
	v, err := script()
	if err == nil && step {
		returning.Observe(v != newKey)
	}
	return v, err
}

// NewGCRACall returns the call for rate r; now is a test clock, or nil.
func NewGCRACall(r store.Rate, now func() time.Time) GCRACall {
	t := int64(r.Interval() / time.Microsecond)
	c := GCRACall{T: t, Millis: t%1000 == 0, Interval: t}
	if c.Millis {
		c.Interval = t / 1000
	}
	if now != nil {
		at := now()
		c.Now = at.UnixMicro()
		if c.Millis {
			c.Now = at.UnixMilli()
		}
	}
	return c
}
