package redisstore

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redislua"
)

// warnIfDeadlinesIgnored logs once per New when client would ignore context
// deadlines on the network. A Limiter bounds every store call by
// Policy.Timeout through the context; a client without
// ContextTimeoutEnabled waits its ReadTimeout (3 s by default) instead, so a
// silent Redis would hold every request that long. That is a configuration
// mistake worth one log line, not an error: the store still works.
func warnIfDeadlinesIgnored(log *slog.Logger, client redis.UniversalClient) {
	enabled := true
	switch c := client.(type) {
	case *redis.Client:
		enabled = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		enabled = c.Options().ContextTimeoutEnabled
	}
	if !enabled {
		log.Warn("redisstore: the Redis client was made without ContextTimeoutEnabled: " +
			"store calls wait for its ReadTimeout instead of the policy's short Timeout")
	}
}

// ttlCeiling is the largest time.Duration of whole milliseconds, where
// roundUp and remaining saturate (redislua.TTLCeiling).
const ttlCeiling = redislua.TTLCeiling
