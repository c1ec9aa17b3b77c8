package storekit

import (
	"crypto/sha256"
	"encoding/base64"
)

// MaxComponent is the longest a key component may be once escaped; a longer
// one is replaced by "%!" and the base64url SHA-256 of its bytes, so that the
// stored key stays short whatever a request sends, and stays injective.
const MaxComponent = 64

// Key returns <prefix>:{<policy>:<id>}, policy and id escaped (':', '{',
// '}', '%' and bytes outside 0x21-0x7e become %XX) so that two pairs never
// meet. The braces are a Redis Cluster hash tag: FenceKey and RecordKey
// share the lock's slot. prefix must hold no brace.
func Key(prefix, policy, id string) string {
	var buf [keyBuf]byte // one allocation, for the string, unless the key is longer
	return string(AppendKey(buf[:0], prefix, policy, id))
}

// keyBuf is the stack buffer keys are built in before they become strings.
const keyBuf = 128

// AppendKey appends Key(prefix, policy, id) to dst, for a caller that builds
// the key and other bytes into one string.
func AppendKey(dst []byte, prefix, policy, id string) []byte {
	return AppendJobKey(dst, LockJob, prefix, policy, id, "")
}

// Job is the kind of policy a key belongs to. Each kind has a family of
// keys of its own, so that a Lock, a Quota and a Replay of one name never
// touch each other's keys.
type Job uint8

// The jobs, and so the key families.
const (
	// LockJob keys are Key's: <prefix>:{<policy>:<id>}, with the
	// FenceKey and RecordKey siblings.
	LockJob Job = iota
	// QuotaJob keys are <prefix>:{<policy>:<id>:quota}:<rate>, the rate's
	// name escaped as a component: every rate of one identity shares the
	// hash tag, and so one Cluster slot.
	QuotaJob
	// ReplayJob keys are <prefix>:{<policy>:<id>:replay}, with a lock's
	// siblings.
	ReplayJob
)

// AppendJobKey appends the key of job for policy and id to dst; rate is a
// QuotaJob's rate name (the policy's own rate is the one named policy), and
// other jobs ignore it. Keys never meet across jobs, policies, ids or rates,
// nor meet another key's FenceKey or RecordKey (TestKeyFamiliesNeverMeet),
// since no escaped component holds ':', '{' or '}': the hash tag names the
// job (a lock's holds one ':', a replay's ends in ":replay", a quota's in
// ":quota"); after it a lock or replay key ends, a quota key holds one ':'
// before its rate, and a sibling adds one more.
func AppendJobKey(dst []byte, job Job, prefix, policy, id, rate string) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, ":{"...)
	dst = appendComponent(dst, policy)
	dst = append(dst, ':')
	dst = appendComponent(dst, id)
	switch job {
	case QuotaJob:
		dst = append(dst, ":quota}:"...)
		return appendComponent(dst, rate)
	case ReplayJob:
		dst = append(dst, ":replay"...)
	}
	return append(dst, '}')
}

// FenceKey returns the key of a lock key's fencing counter, in its slot.
func FenceKey(key string) string { return key + ":fence" }

// RecordKey returns the key of a lock key's record, in its slot. It is never
// a lock key: those end with their hash tag's closing brace.
func RecordKey(key string) string { return key + ":record" }

// JoinID joins values into one identity for Key, escaping each so that
// different lists never give the same identity.
func JoinID(parts ...string) string {
	n := len(parts)
	for _, p := range parts {
		n += rawEscapedLen(p)
	}
	var buf [keyBuf]byte
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

var escaped = func() (t [256]bool) {
	for c := range t {
		t[c] = c <= 0x20 || c >= 0x7f || c == ':' || c == '{' || c == '}' || c == '%'
	}
	return t
}()

func rawEscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if escaped[s[i]] {
			n += 2
		}
	}
	return n
}

// appendComponent appends s escaped, or hashed when that is longer than
// MaxComponent.
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
		if c := s[i]; escaped[c] {
			b = append(b, s[start:i]...)
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
			start = i + 1
		}
	}
	return append(b, s[start:]...)
}
