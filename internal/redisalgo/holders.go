package redisalgo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// acquireHoldersScript takes a place of a semaphore (Request.Holders above
// 1): a sorted set of tokens scored by their expiry.
var acquireHoldersScript = newScript("acquire_holders")

// semaphore reports whether req asks for a key with several holders, or
// for a Holders count no store takes (acquireHolders refuses it).
func semaphore(req store.Request) bool { return req.Holders > 1 || req.Holders < 0 }

// acquireHolders runs the semaphore's acquire script, one round trip.
func (s *Store) acquireHolders(ctx context.Context, req store.Request, ms int64) (store.Grant, error) {
	if err := storekit.CheckHolders(s.name, req); err != nil {
		return store.Grant{}, err
	}
	script, keys, args := s.acquireCall(req, ms)
	res, err := s.conn.Eval(ctx, script, keys, args...)
	if err != nil {
		return store.Grant{}, s.fail("acquire", err, true)
	}
	return s.grantOf(req, res)
}

// acquireCall returns the script that acquires req, with its keys and args.
func (s *Store) acquireCall(req store.Request, ms int64) (*Script, []string, []string) {
	keys, args := s.acquireArgs(req, ms)
	if !semaphore(req) {
		return acquireScript, keys, args
	}
	args[3] = strconv.Itoa(req.Holders) // in place of the reentrant flag
	return acquireHoldersScript, keys, args
}

// grantOf decodes the reply of acquireCall's script.
func (s *Store) grantOf(req store.Request, res []int64) (store.Grant, error) {
	if !semaphore(req) {
		return s.grant(res)
	}
	switch {
	case len(res) != 4:
		return store.Grant{}, fmt.Errorf("%s: acquire: unexpected script reply %v", s.name, res)
	case res[0] != 1:
		return store.Grant{Remaining: remaining(res[1]), Holders: int(res[2])}, nil
	}
	return store.Grant{Acquired: true, TTL: duration(res[3]), Fence: res[1], Holds: 1, Holders: int(res[2])}, nil
}
