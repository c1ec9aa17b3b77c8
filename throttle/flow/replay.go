package flow

import (
	"context"
	"errors"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// beginReplay is begin for a Replay: the key's first call goes ahead to
// record its answer; a duplicate gets the recorded answer, or the refusal
// that says why not.
func (j *Job) beginReplay(ctx context.Context, c *Call, p *Permit, ref *Refusal) bool {
	lease, rec, err := j.replay.Claim(ctx, storekit.JoinID(c.Method, c.Route, c.ID))
	switch {
	case err != nil:
		if j.refuse(err, Limits{}, p, ref) {
			return true
		}
		if ref.Reason == ReasonContended {
			ref.Reason, ref.RetryAfter, ref.Limits = ReasonInFlight, time.Second, j.policy()
		}
		return false
	case rec != nil:
		*ref = j.replayed(rec, c.Fingerprint)
		return false
	}
	h := &p.hold
	h.job, p.limits = j, j.policy()
	if lease == nil { // failed open
		return true
	}
	h.lease, h.id, p.records, p.limits = lease, c.Fingerprint, true, j.lockLimits(0, j.heldT)
	if j.fence {
		p.ctx = throttle.WithLease(ctx, lease)
	}
	if j.observer != nil {
		h.since = time.Since(epoch)
	}
	return true
}

// replayed answers a duplicate that found the record b, with RateLimit
// fields of now, never the recorded ones: r=0 and t the seconds the key is
// still held (none when the record does not say).
func (j *Job) replayed(b []byte, fp string) Refusal {
	rec, err := decodeRecord(b)
	switch {
	case err != nil: // another version's, or damaged: never answer with it
		return Refusal{Reason: ReasonContended, RetryAfter: time.Second, Limits: j.lockLimits(0, 1), Err: err}
	case fp != "" && rec.fingerprint != "" && fp != rec.fingerprint:
		return Refusal{Reason: ReasonKeyReused, Limits: j.policy()}
	case rec.answer == nil:
		return Refusal{Reason: ReasonNotKept, RetryAfter: wholeSeconds(max(time.Until(rec.expires), time.Millisecond)),
			Limits: j.policy()}
	}
	t := int64(-1)
	if rec.expires.UnixMilli() > 0 && time.Until(rec.expires) > 0 {
		t = seconds(time.Until(rec.expires))
	}
	return Refusal{Reason: ReasonReplayed, RetryAfter: time.Duration(max(t, 0)) * time.Second,
		Limits: j.lockLimits(0, t), Replayed: rec.answer}
}

// recordRetry bounds the retries of a record while the store fails.
const recordRetry = 2 * time.Second

// record stores a successful first answer a, or the mark of an answer not
// kept if there is none or the store finds it too large. A failing store
// is retried with backoff, then once a second in the background while the
// key is held: meanwhile its duplicates are refused, never run again.
func (h *hold) record(ctx context.Context, a *Answer) {
	expires := time.Now().Add(h.job.window) // Record holds the key for the TTL
	rec := encodeRecord(a, h.id, expires)
	notKept := false
	for pause := recordRetry / 32; ; pause *= 2 {
		err := h.lease.Record(ctx, rec)
		switch {
		case errors.Is(err, store.ErrInvalid) && !notKept:
			rec, notKept = encodeRecord(nil, h.id, expires), true
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
			}(context.WithoutCancel(ctx), h.lease, rec)
			return
		}
		time.Sleep(pause)
	}
}
