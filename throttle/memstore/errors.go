package memstore

import "errors"

// ErrFull is returned by Acquire when the key needs a new entry and its shard
// holds as many live locks (or fence counters) as WithMaxKeys allows. It is a
// store failure, not a contention: the Limiter reports it as one
// (throttle.ErrStore) and the policy's WhenStoreFails (fail open, fail
// closed) decides, instead of the store growing without bound under a flood of keys.
var ErrFull = errors.New("memstore: store is full")
