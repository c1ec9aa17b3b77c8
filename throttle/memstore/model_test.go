package memstore

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// modelLock is what TestStoreModel expects a key to hold.
type modelLock struct {
	token     string
	expires   time.Duration // since the start
	holds     int           // 0 for a plain lock
	reentrant bool
}

// TestStoreModel drives a Store, on a fake clock, and a plain map with the
// same random acquisitions (plain and reentrant), releases, extensions and
// clock steps over a few keys and TTLs of several classes, and compares every
// answer: whether a key is granted, the Remaining of a refusal, the Holds of
// a re-entry, the outcome of a Release or an Extend. The rings and the index
// move locks between classes, clear and reclaim entries under every such
// sequence; the model knows none of that, only what a key holds.
func TestStoreModel(t *testing.T) {
	ttls := []time.Duration{time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond, time.Second}
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 99))
		clk := newFakeClock()
		start := clk.Now()
		s := New(WithClock(clk.Now), WithMaxKeys(1<<12))
		model := map[string]modelLock{}
		now := func() time.Duration { return clk.Now().Sub(start) }
		live := func(key string) (modelLock, bool) {
			l, ok := model[key]
			if ok && l.expires <= now() {
				delete(model, key)
				return modelLock{}, false
			}
			return l, ok
		}
		for step := range 20_000 {
			key := "k" + strconv.Itoa(rng.IntN(24))
			tok := "t" + strconv.Itoa(rng.IntN(3))
			ttl := ttls[rng.IntN(len(ttls))]
			at := func(what string) string {
				return "seed " + strconv.FormatUint(seed, 10) + " step " + strconv.Itoa(step) + ": " + what + " " + key + " by " + tok
			}
			switch op := rng.IntN(10); {
			case op < 4:
				reentrant := rng.IntN(3) == 0
				g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: ttl, Reentrant: reentrant})
				if err != nil {
					t.Fatalf("%s: %v", at("Acquire"), err)
				}
				l, held := live(key)
				switch {
				case !held:
					model[key] = modelLock{token: tok, expires: now() + ttl, holds: b2i(reentrant), reentrant: reentrant}
					if !g.Acquired || g.TTL != ttl {
						t.Fatalf("%s: %+v, want a new hold of %v", at("Acquire"), g, ttl)
					}
				case l.token != tok || l.reentrant != reentrant:
					if g.Acquired || g.Remaining != l.expires-now() {
						t.Fatalf("%s: %+v, want refused with %v left", at("Acquire"), g, l.expires-now())
					}
				case !reentrant: // the holder's retry: granted as it stands
					if !g.Acquired || g.TTL != l.expires-now() {
						t.Fatalf("%s: %+v, want the retry granted with %v left", at("Acquire"), g, l.expires-now())
					}
				default:
					l.holds++
					l.expires = max(l.expires, now()+ttl)
					model[key] = l
					if !g.Acquired || g.Holds != l.holds || g.TTL != l.expires-now() {
						t.Fatalf("%s: %+v, want hold %d with %v left", at("re-entry"), g, l.holds, l.expires-now())
					}
				}
			case op < 6:
				got, err := s.Release(bg, key, tok)
				if err != nil {
					t.Fatal(err)
				}
				want := store.Gone
				if l, held := live(key); held {
					switch {
					case l.token != tok:
						want = store.HeldByOther
					case l.holds > 1:
						want = store.StillHeld
						l.holds--
						model[key] = l
					default:
						want = store.OK
						delete(model, key)
					}
				}
				if got != want {
					t.Fatalf("%s: %v, want %v", at("Release"), got, want)
				}
			case op < 8:
				got, err := s.Extend(bg, key, tok, ttl)
				if err != nil {
					t.Fatal(err)
				}
				want := store.Gone
				if l, held := live(key); held {
					want = store.HeldByOther
					if l.token == tok {
						want = store.OK
						if l.reentrant {
							l.expires = max(l.expires, now()+ttl)
						} else {
							l.expires = now() + ttl
						}
						model[key] = l
					}
				}
				if got != want {
					t.Fatalf("%s: %v, want %v", at("Extend"), got, want)
				}
			default:
				clk.Advance(time.Duration(rng.IntN(4)) * time.Millisecond) // whole milliseconds, as the store rounds
			}
		}
		// Everything expires: the store gives back every lock.
		clk.Advance(2 * time.Second)
		for i := range 64 {
			key := "late" + strconv.Itoa(i)
			acquire(t, s, key, "t", time.Millisecond)
			outcome(t, store.OK)(s.Release(bg, key, "t"))
		}
		if locks, _, _ := s.counts(); locks > 24 {
			t.Fatalf("seed %d: %d locks stored after all expired", seed, locks)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
