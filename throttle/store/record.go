package store

import "context"

// Recorder is implemented by stores that keep a record next to a lock: bytes
// written by the holder (a Replay's response) that duplicates read instead
// of being refused. The record is tied to the hold: only the holder writes
// it, it expires with the lock as it was when written (Extend does not move
// it), Release deletes it in the same atomic step, and a key taken again
// starts without one. Anyone who knows the key reads it.
type Recorder interface {
	// Record stores a copy of rec as key's record if token holds key (OK),
	// and otherwise writes nothing (HeldByOther, Gone). It wakes key's
	// watchers. A store may refuse a large rec with ErrInvalid; it never
	// truncates one.
	Record(ctx context.Context, key, token string, rec []byte) (Outcome, error)
	// Recorded returns a copy of key's record, or found false when there is
	// none.
	Recorded(ctx context.Context, key string) (rec []byte, found bool, err error)
}
