package guard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// WithRecording sets what a Replay policy records of its first responses;
// other modes ignore it. See Recording for the defaults.
func WithRecording(r Recording) Option {
	return func(g *Guard) { g.rc = newRecording(r) }
}

// inFlightRetry is the Retry-After of a duplicate whose original is still
// running when its wait ends: the original's end is unknown, and usually
// near.
const inFlightRetry = time.Second

// beginReplay decides a request of a Replay policy whose identity is id and
// whose body has the given fingerprint ("" to not compare bodies), with
// Replay.Claim:
//
//   - The first request of the key goes ahead, its response captured, and
//     its ticket records it when it succeeds (or releases the key when it
//     fails).
//   - A duplicate of a recorded success gets a rejection whose Replay is
//     that response: the same status, recorded headers and body, plus
//     Idempotent-Replayed: true. Reason ReasonReplayed.
//   - A duplicate whose fingerprint differs from the recorded one reused the
//     key for another request: 422 Unprocessable Content, ReasonKeyReused
//     (draft-ietf-httpapi-idempotency-key-header-07 section 2.7).
//   - A duplicate of a success whose response could not be kept gets 409
//     Conflict at once, ReasonNotKept, until the window ends: the request
//     was processed, and is not processed again.
//   - A duplicate whose original is still in flight when the Replay's Wait ends
//     gets 409 Conflict with Retry-After: 1, ReasonInFlight.
//
// The store-error policy (Replay fails closed by default), DryRun
// and a cancelled ctx are handled as for the other modes.
func (g *Guard) beginReplay(ctx context.Context, id, fingerprint string) (context.Context, ticket, *Rejection) {
	lease, rec, err := g.replay.Claim(ctx, id)
	switch {
	case err != nil:
		rej := g.rejection(err)
		if rej.Reason == ReasonContended && !g.p.dryRun {
			rej.Status, rej.Reason, rej.RetryAfter = http.StatusConflict, ReasonInFlight, inFlightRetry
		}
		return g.reject(ctx, rej)
	case rec != nil:
		return ctx, ticket{}, g.replayed(rec, fingerprint)
	case lease == nil: // the store failed open: unguarded
		return ctx, ticket{g: g}, nil
	}
	t := ticket{g: g, lease: lease, capture: &Capture{rc: &g.rc}, fingerprint: fingerprint}
	if g.p.fence {
		ctx = throttle.WithLease(ctx, lease)
	}
	return ctx, t, nil
}

// replay returns the answer to a duplicate that found rec.
func (g *Guard) replayed(b []byte, fingerprint string) *Rejection {
	rec, err := decodeRecord(b)
	switch {
	case err != nil:
		// Not this version's, or damaged: turn the duplicate away for
		// a moment rather than answer with what may not be the original.
		rej := g.newRejection(g.p.status, ReasonContended, err)
		rej.RetryAfter = time.Second
		return rej
	case fingerprint != "" && rec.fingerprint != "" && fingerprint != rec.fingerprint:
		return g.newRejection(http.StatusUnprocessableEntity, ReasonKeyReused, nil)
	case rec.resp == nil:
		rej := g.newRejection(http.StatusConflict, ReasonNotKept, nil)
		rej.RetryAfter = max(time.Until(rec.expires), time.Millisecond)
		return rej
	}
	return &Rejection{Status: rec.resp.Status, Reason: ReasonReplayed, Policy: g.p.name, Replay: rec.resp, g: g}
}

// record stores the response of a Replay request that succeeded, as its
// Capture saw it. A response the store refuses (larger than it keeps) is
// recorded as not kept instead, so that its duplicates are told at once
// (ReasonNotKept) rather than kept waiting for a record that never comes.
// A store that fails is asked again, with backoff, for up to recordRetry
// (the client has its answer, and its duplicates wait for this record),
// then once a second in the background while the key is held. Until the
// store takes the record, the key stays held with none, so that
// duplicates get 409 (in flight), never a second run of the handler.
// Lease.Record logs and counts every failure.
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
			return // recorded, or the key is gone (ErrNotHeld)
		case pause > recordRetry/2:
			// Still failing: go on in the background, once a second,
			// while the key is held, so that the duplicates that come
			// once the store is back get the record, not a wait.
			go recordLater(context.WithoutCancel(ctx), t.lease, rec)
			return
		}
		time.Sleep(pause)
	}
}

// recordLater writes rec once a second until the store takes it or the
// lease's key expires; ctx carries the request's values, not its
// cancellation.
func recordLater(ctx context.Context, lease *throttle.Lease, rec []byte) {
	for lease.ValidFor() > time.Second {
		time.Sleep(time.Second)
		if err := lease.Record(ctx, rec); !errors.Is(err, throttle.ErrStore) {
			return
		}
	}
}

// recordRetry bounds how long a response's record is retried while the
// store fails.
const recordRetry = 2 * time.Second
