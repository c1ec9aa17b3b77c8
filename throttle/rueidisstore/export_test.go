package rueidisstore

import "github.com/go-throttle/throttle/internal/redisalgo"

// Hooks for the tests in package rueidisstore_test.

// WithQuotaClock makes AllowN use now() instead of the server's TIME.
var WithQuotaClock = redisalgo.WithClock

// WithPath holds plain acquisitions and quota charges on one path, as
// redisstore's test hook of the same name: "store", "set", "pipeline" or
// "script".
func WithPath(path string) Option {
	p, ok := map[string]redisalgo.Path{"store": redisalgo.Auto, "set": redisalgo.Set,
		"pipeline": redisalgo.Lookup, "script": redisalgo.Scripted}[path]
	if !ok {
		panic("rueidisstore: WithPath: unknown path " + path)
	}
	return redisalgo.WithPath(p)
}
