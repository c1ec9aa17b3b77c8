package store

import (
	"crypto/sha256"
	"encoding/base64"
)

// MaxComponent is the longest a key component may be once escaped. A longer
// component is replaced by "%!" and the unpadded base64url SHA-256 of its raw
// bytes (45 bytes), so that a request cannot make the stored key long
// however much it sends, and two different long values still get different
// keys (SHA-256 is collision resistant).
const MaxComponent = 64

// Key returns the stored key for one identity under one policy:
//
//	<prefix>:{<policy>:<id>}
//
// policy and id are escaped so that building is injective: ':', '{', '}',
// '%', bytes below 0x21 and bytes from 0x7f up are written as %XX, and a
// part longer than MaxComponent after escaping is replaced by its hash as
// described there. Two different (policy, id) pairs never give the same key.
//
// The braces are a Redis Cluster hash tag: the lock key and its siblings (the
// fencing counter, see FenceKey) hash to one slot, so one script can touch
// them all. prefix is not escaped: it must not contain '{' or '}' (the
// throttle constructors check it).
//
// To key on several values, join them first with keyfuncs.Join or JoinID,
// which escape each part.
func Key(prefix, policy, id string) string {
	// Built on the stack and copied once into the string: one allocation
	// for a key of up to keyBuf bytes, as many as a strings.Builder of the
	// exact size would cost.
	var buf [keyBuf]byte
	b := buf[:0]
	if n := len(prefix) + 4 + escapedLen(policy) + escapedLen(id); n > len(buf) {
		b = make([]byte, 0, n)
	}
	return string(AppendKey(b, prefix, policy, id))
}

// keyBuf is the size of the stack buffers keys and identities are built
// in before they become strings: enough for a default prefix, a policy
// name and an escaped identity of typical length.
const keyBuf = 128

// AppendKey appends Key(prefix, policy, id) to dst and returns the extended
// slice. It lets a caller build the key into a buffer of its own, together
// with other bytes (the throttle limiter builds the key and the token of an
// acquisition into one string, one allocation for both).
func AppendKey(dst []byte, prefix, policy, id string) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, ":{"...)
	dst = appendComponent(dst, policy)
	dst = append(dst, ':')
	dst = appendComponent(dst, id)
	return append(dst, '}')
}

// FenceKey returns the key of the fencing counter that belongs to a lock key
// made by Key. It shares the lock key's hash tag and so its Redis Cluster
// slot.
func FenceKey(key string) string { return key + ":fence" }

// JoinID joins several values into one identity for Key, escaping each so
// that different lists never give the same identity: JoinID("a:b", "c") and
// JoinID("a", "b:c") differ. Components too long for Key are hashed there.
func JoinID(parts ...string) string {
	n := len(parts)
	for _, p := range parts {
		n += rawEscapedLen(p)
	}
	var buf [keyBuf]byte // see Key
	b := buf[:0]
	if n > len(buf) {
		b = make([]byte, 0, n)
	}
	for i, p := range parts {
		if i > 0 {
			b = append(b, ':')
		}
		b = appendEscaped(b, p)
	}
	return string(b)
}

// escaped[c] is true for the bytes that Key escapes. A table lookup per
// byte instead of six comparisons: keys are built on every request.
var escaped = func() (t [256]bool) {
	for c := range t {
		t[c] = c <= 0x20 || c >= 0x7f || c == ':' || c == '{' || c == '}' || c == '%'
	}
	return t
}()

func needsEscape(c byte) bool { return escaped[c] }

func rawEscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n += 2
		}
	}
	return n
}

// hashedLen is the length of "%!" plus base64url(SHA-256) without padding.
const hashedLen = 2 + 43

func escapedLen(s string) int {
	if n := rawEscapedLen(s); n <= MaxComponent {
		return n
	}
	return hashedLen
}

// appendComponent appends s escaped, or hashed when that is longer than
// MaxComponent. A short s is escaped in one pass, and hashed instead only
// if the escaped form turns out too long (at most 3*MaxComponent bytes
// were written): one pass over the identity rather than a first to measure
// its escaped length (BenchmarkAppendKeyToken measures it).
func appendComponent(b []byte, s string) []byte {
	if len(s) <= MaxComponent {
		start := len(b)
		if b = appendEscaped(b, s); len(b)-start <= MaxComponent {
			return b
		}
		b = b[:start]
	}
	sum := sha256.Sum256([]byte(s))
	b = append(b, "%!"...)
	return base64.RawURLEncoding.AppendEncode(b, sum[:])
}

const hexDigits = "0123456789ABCDEF"

func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape(c) {
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		start = i + 1
	}
	return append(b, s[start:]...)
}
