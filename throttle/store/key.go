package store

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
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
// them all. prefix is not escaped: it must not contain '{' or '}' (throttle.New
// checks it).
//
// To key on several values, join them first with keyfuncs.Join or JoinID,
// which escape each part.
func Key(prefix, policy, id string) string {
	var b strings.Builder
	b.Grow(len(prefix) + 4 + escapedLen(policy) + escapedLen(id))
	b.WriteString(prefix)
	b.WriteString(":{")
	writeComponent(&b, policy)
	b.WriteByte(':')
	writeComponent(&b, id)
	b.WriteByte('}')
	return b.String()
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
	var b strings.Builder
	b.Grow(n)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		writeEscaped(&b, p)
	}
	return b.String()
}

func needsEscape(c byte) bool {
	return c <= 0x20 || c >= 0x7f || c == ':' || c == '{' || c == '}' || c == '%'
}

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

func writeComponent(b *strings.Builder, s string) {
	if rawEscapedLen(s) <= MaxComponent {
		writeEscaped(b, s)
		return
	}
	sum := sha256.Sum256([]byte(s))
	var enc [43]byte
	base64.RawURLEncoding.Encode(enc[:], sum[:])
	b.WriteString("%!")
	b.Write(enc[:])
}

const hexDigits = "0123456789ABCDEF"

func writeEscaped(b *strings.Builder, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape(c) {
			continue
		}
		b.WriteString(s[start:i])
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
		start = i + 1
	}
	b.WriteString(s[start:])
}
