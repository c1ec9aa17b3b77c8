package redisalgo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// ErrNotReplicated is matched by the error of an acquisition too few replicas
// acknowledged (WithReplicaAck).
var ErrNotReplicated = errors.New("redisstore: too few replicas acknowledged the lock")

// Waiter is a Conn that sends WAIT after a script in one round trip on the
// connection that ran it, as WithReplicaAck needs.
type Waiter interface {
	// EvalWait is Eval then WAIT: acked is WAIT's reply, waitErr its error.
	EvalWait(ctx context.Context, s *Script, replicas int, timeout time.Duration,
		keys []string, args ...string) (res []int64, acked int64, waitErr, err error)
}

// acquireAcked runs the acquire script and WAIT. A grant this call did not
// write (a retry found our token: the reply is the PTTL, not the TTL asked)
// is rewritten by the extend script and WAIT, so that the replicas have it.
func (s *Store) acquireAcked(ctx context.Context, req store.Request, ms int64) (store.Grant, error) {
	if err := storekit.CheckHolders(s.name, req); err != nil {
		return store.Grant{}, err
	}
	w := s.conn.(Waiter)
	script, keys, args := s.acquireCall(req, ms)
	res, acked, waitErr, err := w.EvalWait(ctx, script, s.cfg.replicas, s.cfg.ackTimeout, keys, args...)
	if err != nil {
		return store.Grant{}, s.fail("acquire", err, true)
	}
	g, err := s.grantOf(req, res)
	if err == nil && g.Acquired && !req.Fence && !req.Reentrant && res[3] != ms {
		var n []int64
		n, acked, waitErr, err = w.EvalWait(ctx, extendScript, s.cfg.replicas, s.cfg.ackTimeout,
			[]string{req.Key}, req.Token, strconv.FormatInt(res[3], 10))
		if err != nil {
			return store.Grant{}, s.fail("acquire", err, false)
		}
		if len(n) != 1 || n[0] != 1 {
			waitErr = errors.New("the key was lost while its replication was confirmed")
		}
	}
	return s.acked(ctx, req, g, err, acked, waitErr)
}

// acked reports grant g once enough replicas acknowledged it, and otherwise
// releases it: a failover could hand it to somebody else.
func (s *Store) acked(ctx context.Context, req store.Request, g store.Grant, err error, acked int64, waitErr error) (store.Grant, error) {
	switch {
	case err != nil || !g.Acquired:
		return g, err
	case waitErr != nil:
		err = fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, waitErr)
	case acked < int64(s.cfg.replicas):
		err = fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, acked, s.cfg.replicas, s.cfg.ackTimeout)
	default:
		return g, nil
	}
	if _, rerr := s.Release(ctx, req.Key, req.Token); rerr != nil {
		return store.Grant{}, fmt.Errorf("%w; releasing the key again: %v", err, rerr)
	}
	return store.Grant{}, fmt.Errorf("%w; the key was released again (%w)", err, store.ErrNotApplied)
}
