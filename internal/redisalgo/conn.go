package redisalgo

import (
	"context"
	"crypto/sha1" //nolint:gosec // Redis names scripts by SHA1; no security rests on it.
	"encoding/hex"
	"time"
)

// Conn is what the store needs of a Redis client: a go-redis or rueidis
// client in about a hundred lines. Every command touches keys of one Cluster
// hash slot; a Cluster client routes it by its first key.
type Conn interface {
	// Eval runs s with EVALSHA and, when the server answers NOSCRIPT, with
	// EVAL (which caches it). The reply, an integer or an array of
	// integers, comes back as a slice.
	Eval(ctx context.Context, s *Script, keys []string, args ...string) ([]int64, error)
	// SetNX sends SET key value NX PX ms and reports whether it set the key.
	// With lookup, GET key and PTTL key follow in the same round trip and
	// holder and pttl are their replies (holder "" when GET fails: no key,
	// or a hash).
	SetNX(ctx context.Context, key, value string, ms int64, lookup bool) (set bool, holder string, pttl int64, err error)
	// Get returns key's value, and found false when there is none.
	Get(ctx context.Context, key string) (val []byte, found bool, err error)
	// PubSub opens a connection for Watch. It may connect lazily.
	PubSub() PubSub
	// Policies returns the maxmemory-policy of every master it can ask, by
	// address, with the first error.
	Policies(ctx context.Context) (map[string]string, error)
	// Kind tells what a failed command means for the store.
	Kind(err error) ErrKind
}

// ErrKind classifies a client's error.
type ErrKind uint8

const (
	// Other is any error that may have left the command applied.
	Other ErrKind = iota
	// NotApplied: the command surely never reached Redis (closed client,
	// no connection to be had).
	NotApplied
	// SlotMoving: Redis refused a command on several keys of a Cluster slot
	// that is migrating (TRYAGAIN, or an ASK redirection not followed).
	SlotMoving
)

// PubSub is one connection in Pub/Sub mode, used by one goroutine to send
// and one to receive.
type PubSub interface {
	Subscribe(ctx context.Context, channels ...string) error
	Unsubscribe(ctx context.Context, channels ...string) error
	// Receive waits at most d for a message or a subscription confirmation
	// (subscribed true). ok is false when none came in time: an idle
	// connection is not an error. An error means the connection is lost.
	Receive(ctx context.Context, d time.Duration) (channel string, subscribed, ok bool, err error)
	Ping(ctx context.Context) error
	Close() error
}

// Script is a Lua script of package redislua with its SHA1, which EVALSHA
// sends instead of the source.
type Script struct {
	Src string
	SHA string
}

// NewScript returns the Script of src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src)) //nolint:gosec // see the import
	return &Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}
