package rueidisstore

import "github.com/go-throttle/throttle/internal/redisalgo"

// Hooks for the tests in package rueidisstore_test.

// WithQuotaClock makes AllowN use now() instead of the server's TIME.
var WithQuotaClock = redisalgo.WithClock

// WithPath holds plain acquisitions and quota charges on one path: "set",
// "pipeline", "script" or "store" (the default: the choice by refusals).
var WithPath = redisalgo.WithPath
