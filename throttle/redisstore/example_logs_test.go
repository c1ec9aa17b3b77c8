package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// goRedisLogger sends go-redis's own log lines (failed dials, connection
// pool trouble during an outage) to a *slog.Logger instead of its default
// unstructured lines on stderr.
type goRedisLogger struct{ log *slog.Logger }

func (l goRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "source", "go-redis")
}

// go-redis logs through one process-wide logger that the store leaves
// alone. A program that wants those lines in its structured log sets the
// logger once at start-up, before it makes clients.
func Example_goRedisLogs() {
	redis.SetLogger(goRedisLogger{slog.Default()})
}
