package storekit

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// tokenPrefix is 15 random bytes drawn once per process (2^-120 odds that
// two share it); tokenSeq counts the tokens made since: no system call each.
var (
	tokenPrefix string
	tokenSeq    atomic.Uint64
)

func init() {
	var b [15 + 8]byte
	_, _ = rand.Read(b[:])
	tokenPrefix = base64.RawURLEncoding.EncodeToString(b[:15])
	tokenSeq.Store(binary.LittleEndian.Uint64(b[15:]))
}

// NewToken returns a token unique to this call across processes, in 31
// base64url characters; it proves ownership to the stores' compare-and-delete.
func NewToken() string {
	var buf [31]byte
	return string(AppendToken(buf[:0]))
}

// AppendToken appends a new token, as NewToken makes, to dst.
func AppendToken(dst []byte) []byte {
	return AppendCounter(append(dst, tokenPrefix...), tokenSeq.Add(1))
}

// AppendCounter appends n's 8 bytes in unpadded base64url (11 characters),
// without the escaping buffer of package base64: a lock held only in this
// process's memory takes a bare counter as its token.
func AppendCounter(dst []byte, n uint64) []byte {
	for shift := 58; shift >= 4; shift -= 6 {
		dst = append(dst, b64[n>>shift&63])
	}
	return append(dst, b64[n&15<<2])
}

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// Drift is the allowance subtracted from a lease's validity, as Redlock
// prescribes, for clocks running at slightly different rates.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }
