package store

import "context"

// RecordKey returns the key of the record that belongs to a lock key made by
// Key (see Recorder). Like FenceKey, it shares the lock key's hash tag and so
// its Redis Cluster slot, so that one script can check the lock and write or
// delete the record in one atomic step. It cannot be a lock key itself: those
// end with the closing brace of their hash tag.
func RecordKey(key string) string { return key + ":record" }

// Recorder is implemented by stores that keep a record next to a lock: an
// opaque byte string written by the lock's holder that lives no longer than
// the hold it was written under. It is the store's part of replaying
// duplicates: the first request of a key runs under the lock and, when it
// succeeds, records its response (status, headers, body, encoded by the
// caller; the store never looks inside); a duplicate that finds the key
// held reads the record and answers with it instead of being refused. The
// lock's TTL is then the window in which duplicates are replayed.
//
// The record is tied to the hold, not merely to the key, so that a
// duplicate never replays a response that its key's current holder did not
// produce:
//
//   - Record is token-checked inside the store, as Extend is: only the
//     holder writes a record, and a holder whose lease ran out (HeldByOther,
//     Gone) writes nothing, however late its call arrives.
//   - The record expires with the lock: it gets the lock's expiry as it is
//     at the moment of Record, so it never outlives a lock that simply runs
//     out, and a key that expired and was taken again has no record of its
//     previous holder.
//   - Release deletes the record in the same atomic step as the lock, so that
//     a holder that gives its key up (an original that failed, say) leaves
//     nothing to replay, and the next holder starts without a record.
//     Release of a reentrant key that stays held (StillHeld) keeps it.
//
// Extend moves the lock's expiry, not the record's: the record keeps the
// expiry the lock had when it was written. A lease extended after Record
// keeps its record only until the lock's earlier expiry (Record again to
// keep it longer), and a lease shortened after Record (an Extend to less
// than the time it had left) leaves a record that outlives it. Record after
// the last Extend of a hold.
//
// A record can be read by anyone who knows the key (Recorded takes no
// token): it is shared by every request whose identity maps to the key,
// which is the point. Do not record what another request with the same key
// must not see.
type Recorder interface {
	// Record stores rec as key's record if, and only if, token holds key
	// now, replacing any earlier record of the key, with the lock's
	// remaining time to live. It returns OK when it wrote the record,
	// HeldByOther when another token holds key, and Gone when nobody does;
	// in both of the latter cases it writes nothing. A reentrant hold of
	// token counts as held, whatever its hold count.
	//
	// Recording wakes key's watchers (Notifier) as a release does, so that
	// a duplicate waiting for an original still in flight reads the record
	// at once instead of at its next poll. A watcher woken by a record finds
	// the key still held: a Watch signal means "look again", not "free".
	//
	// The store does not keep rec: it copies it (or sends it) before it
	// returns. A store may bound the size of a record; it refuses a larger
	// rec with an error matching ErrInvalid and never truncates it (memstore
	// bounds the bytes of all its records, see its WithMaxRecordBytes). An
	// empty key or token is refused with ErrInvalid; an empty rec is a
	// record like any other.
	Record(ctx context.Context, key, token string, rec []byte) (Outcome, error)

	// Recorded returns key's record, in one store call, and found false
	// (with a nil rec) when it has none: the key is free, or held by a
	// holder that recorded nothing. The returned bytes are the caller's to
	// keep. A record is a snapshot: its holder may release the key or record
	// again as soon as Recorded returned. An empty key is refused with
	// ErrInvalid.
	Recorded(ctx context.Context, key string) (rec []byte, found bool, err error)
}
