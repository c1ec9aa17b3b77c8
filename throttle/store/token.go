package store

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"sync/atomic"
)

// tokenPrefix is 15 random bytes drawn once per process; tokenSeq counts the
// tokens made since. Together they make every token unique across processes
// (two processes share a prefix with probability 2^-120) without a system
// call per token.
var (
	tokenPrefix [15]byte
	tokenSeq    atomic.Uint64
)

func init() {
	// crypto/rand.Read never returns an error since Go 1.24; it panics on
	// a broken system source, which is the right answer for lock tokens.
	_, _ = rand.Read(tokenPrefix[:])
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	tokenSeq.Store(binary.LittleEndian.Uint64(seed[:]))
}

// NewToken returns a token unique to this call across all processes: 23
// random-looking bytes (15 drawn from crypto/rand at start-up, 8 from a
// per-process counter) in unpadded URL-safe base64, 31 characters long.
//
// A token proves ownership of a key to the store's compare-and-delete and
// compare-and-extend, so that a holder whose lease ran out cannot free or
// extend the lock that somebody else holds now. It costs one allocation and
// no system call.
func NewToken() string {
	var raw [23]byte
	copy(raw[:15], tokenPrefix[:])
	binary.BigEndian.PutUint64(raw[15:], tokenSeq.Add(1))
	return base64.RawURLEncoding.EncodeToString(raw[:])
}
