package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestAllocsAtRaw pins the client-side cost of the hot calls against the
// raw go-redis commands they stand for, run on the same client and server
// with the same (non-constant) token: a granted Store.Acquire allocates no
// more than client.SetNX, and Store.Release no more than the raw
// token-checked release (redis.Script.Run of a GET-compare-DEL script, as
// bsm/redislock releases). Counting allocations is deterministic, unlike
// timing, and relative to go-redis's own cost, so that a go-redis upgrade
// moves both sides. Measured: 8 and 8 for the acquisition, 10 against 11
// for the release (the release also passes the record key and channel).
func TestAllocsAtRaw(t *testing.T) {
	s, _, c := newStore(t)
	s.SetPlainPath("set")
	ctx := context.Background()
	if err := rawRelease.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	const runs = 200
	tok := store.NewToken()
	keys := func(tag string) func() string {
		ks := make([]string, runs+1) // AllocsPerRun runs once more to warm up
		for i := range ks {
			ks[i] = store.Key("allocs", tag, strconv.Itoa(i))
		}
		return func() (k string) { k, ks = ks[0], ks[1:]; return k }
	}
	measure := func(tag string, op func(key string) error) float64 {
		next := keys(tag)
		var err error
		n := testing.AllocsPerRun(runs, func() {
			if e := op(next()); e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		return n
	}
	// Keys held by raw SETNX, released by each side in turn.
	toRelease := make([]string, 2*(runs+1))
	for i := range toRelease {
		toRelease[i] = store.Key("allocs", "held", strconv.Itoa(i))
		if err := c.SetNX(ctx, toRelease[i], tok, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	nextHeld := func() (k string) { k, toRelease = toRelease[0], toRelease[1:]; return k }

	rawAcq := measure("raw-acquire", func(k string) error { return c.SetNX(ctx, k, tok, 10*time.Second).Err() })
	storeAcq := measure("store-acquire", func(k string) error {
		_, err := s.Acquire(ctx, store.Request{Key: k, Token: tok, TTL: 10 * time.Second})
		return err
	})
	rawRel := measure("raw-release", func(string) error {
		return rawRelease.Run(ctx, c, []string{nextHeld()}, tok).Err()
	})
	storeRel := measure("store-release", func(string) error {
		_, err := s.Release(ctx, nextHeld(), tok)
		return err
	})
	t.Logf("allocations per call: acquire %v (raw SetNX %v), release %v (raw %v)", storeAcq, rawAcq, storeRel, rawRel)
	if storeAcq > rawAcq {
		t.Errorf("Store.Acquire allocates %v times per grant, raw SetNX %v", storeAcq, rawAcq)
	}
	if storeRel > rawRel {
		t.Errorf("Store.Release allocates %v times per call, the raw release %v", storeRel, rawRel)
	}
}
