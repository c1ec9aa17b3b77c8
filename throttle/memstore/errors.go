package memstore

import "github.com/go-throttle/throttle/throttle/store"

// ErrFull is returned by Acquire (and AllowN) when the key needs a new entry
// and its shard holds as many live locks (quotas) as WithMaxKeys allows, or
// the key's policy holds its share of them (WithPolicyShare), and by Record
// when the shard's records, or its policy's, would exceed their share of
// WithMaxRecordBytes; never for a fence counter. Other policies are not
// refused because one policy is at its share. It is a
// store failure, not a contention: the Limiter reports it as one
// (throttle.ErrStore) and the policy's WhenStoreFails (fail open, fail
// closed, fail over) decides, instead of the store growing without bound
// under a flood of keys. A key that is held stays held: its contenders are
// refused as usual, full store or not.
//
// ErrFull matches store.ErrNotApplied: the refused acquisition changed
// nothing, so the Limiter has no token to release behind it.
var ErrFull error = fullError{}

type fullError struct{}

func (fullError) Error() string { return "memstore: store is full" }

// Is makes errors.Is(ErrFull, store.ErrNotApplied) true.
func (fullError) Is(target error) bool { return target == store.ErrNotApplied }
