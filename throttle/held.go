package throttle

import (
	"context"
	"sync/atomic"

	"github.com/go-throttle/throttle/throttle/internal/admit"
	"github.com/go-throttle/throttle/throttle/internal/seq"
	"github.com/go-throttle/throttle/throttle/store"
)

func init() {
	admit.For = func(l *Limiter) admit.Path[Lease] {
		return admit.Path[Lease]{Admit: l.admitHeld, Release: l.releaseHeld}
	}
}

// leaseless reports whether a Limiter on st under p may admit without a
// Lease (see admitHeld): the store is in memory, so a grant cannot come late
// and needs no date; the policy holds its key for a fixed window (Dedupe or
// Cooldown) without a fencing token or re-entry, so the lease is only ever
// released; it neither waits nor fails over, and no Observer wants the
// timings a lease keeps.
func leaseless(local bool, p *Policy) bool {
	return local && (p.Mode == Dedupe || p.Mode == Cooldown) && !p.Fence && !p.Reentrant &&
		p.Wait <= 0 && p.WhenStoreFails != FailOver && p.Observer == nil
}

// admitHeld is Admit for package guard's tickets, which never hand their
// lease to the application. When the Limiter is leaseless it takes the key
// without a Lease or a clock reading and returns the key and token it
// holds; otherwise it returns Admit's lease. Outcomes, Stats, logs and
// WhenStoreFails are Admit's either way.
func (l *Limiter) admitHeld(ctx context.Context, id string) (*Lease, admit.Hold, error) {
	if !l.leaseless {
		lease, err := l.Admit(ctx, id)
		return lease, admit.Hold{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, admit.Hold{}, l.admitted(ctx, false, err)
	}
	req := l.heldRequest(id)
	g, err := l.store.Acquire(ctx, req)
	switch {
	case err != nil:
		err = l.failed(ctx, l.store, req, monoNow(), err)
	case !g.Acquired:
		l.health.answered(l)
		l.stats.rejected.Add(1)
		err = &ContendedError{RetryAfter: g.Remaining}
	default:
		l.health.answered(l)
		l.stats.acquired.Add(1)
		return nil, admit.Hold{Key: req.Key, Token: req.Token}, nil
	}
	return nil, admit.Hold{}, l.admitted(ctx, false, err)
}

// heldSeq numbers the tokens of leaseless holds (see heldRequest).
var heldSeq atomic.Uint64

// heldRequest is request for a leaseless Limiter, whose store is in this
// process: the token only has to differ from every other token in the
// process, not in the world, so it is a counter, "~" and 11 base64url
// characters, instead of store.NewToken's 31 characters with their random
// prefix. Its length, 12, sets it apart from every token store.NewToken
// makes. The key and the token share one string, as in request; a shorter
// one is cheaper to make and to keep (a held key of a default prefix and
// an IPv4 address fits 48 bytes instead of 64).
func (l *Limiter) heldRequest(id string) store.Request {
	var buf [keyTokenBuf]byte
	b := store.AppendKey(buf[:0], l.p.Prefix, l.p.Name, id)
	n := len(b)
	b = seq.Append(append(b, '~'), heldSeq.Add(1))
	kt := string(b)
	return store.Request{Key: kt[:n], Token: kt[n:], TTL: l.p.TTL()}
}

// releaseHeld frees the key of a Hold that admitHeld returned, as
// Lease.Release does: with a lease made for the purpose, since only a
// failed request's release needs one.
func (l *Limiter) releaseHeld(ctx context.Context, h admit.Hold) error {
	req := store.Request{Key: h.Key, Token: h.Token, TTL: l.p.TTL()}
	return newLease(l, false, req, store.Grant{Acquired: true}, monoNow()).Release(ctx)
}
