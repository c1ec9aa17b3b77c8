package redisalgo

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
)

// Conn is what the store needs of a Redis client (go-redis and rueidis
// adapters give it); each command's keys share a Cluster slot.
type Conn interface {
	// Eval runs s with EVALSHA (its digest from Script.SHA, which loads it
	// on keys[0]'s node once), and with EVAL (which caches it) after
	// NOSCRIPT; an integer reply comes back as a slice of one. It keeps
	// neither keys nor args past its return.
	Eval(ctx context.Context, s *Script, keys []string, args ...string) ([]int64, error)
	// SetNX sends SET key value NX PX ms; with lookup, GET key and PTTL key
	// follow in the same round trip (holder "" when GET fails).
	SetNX(ctx context.Context, key, value string, ms int64, lookup bool) (set bool, holder string, pttl int64, err error)
	// Get returns key's value, found false when there is none.
	Get(ctx context.Context, key string) (val []byte, found bool, err error)
	// PubSub returns a new Pub/Sub connection, which may connect lazily.
	PubSub() PubSub
	// Policies returns the maxmemory-policy of every master it can ask
	// ("address=policy" on a Cluster), with the first error.
	Policies(ctx context.Context) ([]string, error)
	// Unsent reports whether err surely kept the command from Redis.
	Unsent(err error) bool
}

// PubSub is one Pub/Sub connection: one goroutine sends, one receives.
type PubSub interface {
	Subscribe(ctx context.Context, channels ...string) error
	Unsubscribe(ctx context.Context, channels ...string) error
	// Receive waits at most d for a message or a subscription confirmation
	// (subscribed); ok is false when none came, an error is a lost connection.
	Receive(ctx context.Context, d time.Duration) (channel string, subscribed, ok bool, err error)
	Ping(ctx context.Context) error
	Close() error
}

// Liveness returns what the watch of the store's calls shares (see
// storekit.Liveness).
func (s *Store) Liveness() *storekit.Liveness { return &s.live }
