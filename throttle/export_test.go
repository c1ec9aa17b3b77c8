package throttle

import "time"

// Accessors for the external tests of this package: the lease's internals
// are not part of the API, but the tests check them.

func (l *Limiter) StoredKey(id string) string { return l.key(id) }
func (ls *Lease) Key() string                 { return ls.key }
func (ls *Lease) Token() string               { return ls.token }
func (ls *Lease) Holds() int                  { return int(ls.holds) }
func (ls *Lease) TTL() time.Duration          { return ls.ttl }
