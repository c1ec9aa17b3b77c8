package store

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"sync/atomic"

	"github.com/go-throttle/throttle/throttle/internal/seq"
)

// tokenPrefix is 15 random bytes drawn once per process; tokenSeq counts the
// tokens made since. Together they make every token unique across processes
// (two processes share a prefix with probability 2^-120) without a system
// call per token.
//
// The prefix is kept encoded: 15 bytes are 20 base64 characters exactly,
// with no group shared with the counter's bytes, so a token is the encoded
// prefix followed by the 11 characters of the counter (see AppendToken).
var (
	tokenPrefix string // encoded
	tokenSeq    atomic.Uint64
)

func init() {
	// crypto/rand.Read never returns an error since Go 1.24; it panics on
	// a broken system source, which is the right answer for lock tokens.
	var prefix [15]byte
	_, _ = rand.Read(prefix[:])
	tokenPrefix = base64.RawURLEncoding.EncodeToString(prefix[:])
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
	var buf [tokenLen]byte
	return string(AppendToken(buf[:0]))
}

// tokenLen is the length of a token.
const tokenLen = 31

// AppendToken appends a new token, as NewToken makes, to dst and returns
// the extended slice: for a caller that builds the token into a buffer of
// its own, with other bytes, to spare it an allocation of its own (the
// throttle limiter builds a request's key and token into one string).
func AppendToken(dst []byte) []byte {
	dst = append(dst, tokenPrefix...)
	return seq.Append(dst, tokenSeq.Add(1))
}
