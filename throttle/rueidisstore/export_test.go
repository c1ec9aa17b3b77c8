package rueidisstore

import "time"

// Hooks for the tests in package rueidisstore_test.

// SetGetOnSet chooses the plain acquisition: SET NX GET (true, the
// default on Redis 7.0 and later) or the older SET+GET+PTTL pipeline.
func (s *Store) SetGetOnSet(on bool) { s.getOnSet.Store(on) }

// GetOnSet reports which plain acquisition the store uses.
func (s *Store) GetOnSet() bool { return s.getOnSet.Load() }

// SetQuotaClock makes AllowN pass now() to the GCRA script instead of
// letting it read the server's TIME. Call it before the store is used.
func (s *Store) SetQuotaClock(now func() time.Time) { s.quotaNow = now }

// IsSyntaxError exposes the check that switches to the pipeline.
var IsSyntaxError = isSyntaxError

// SetQuotaScripted makes every quota charge run the script, never SET NX
// first. Call it before the store is used.
func (s *Store) SetQuotaScripted(on bool) { s.quotaScripted = on }
