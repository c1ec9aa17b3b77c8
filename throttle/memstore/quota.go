package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// quota is a key's GCRA TAT in microseconds since Store.epoch, its expiry,
// and the shard's tick at its last decision, for the eviction of the least
// recently used (in what would be padding: no memory more).
type quota struct {
	tat  int64
	used uint32
	pol  uint16
}

func (q quota) expiry() time.Duration { return time.Duration(q.tat) * time.Microsecond }
func (q quota) policy() uint16        { return q.pol }
func (q quota) size() int64           { return 1 }

// AllowN decides a request of cost against the quota r of key, as the Redis
// stores do (see store.Quota); a new entry that does not fit fails.
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if err := checkQuota(ctx, key, r, cost); err != nil {
		return store.Decision{}, err
	}
	if r.Strict {
		return s.allowStrict(key, r, cost)
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now, _ := s.now(false) // under the lock: decisions in the order of their times
	// One key's decision written out rather than through gcraStep, whose
	// calls BenchmarkQuotaOneOff measures as slower.
	nowUS := int64(now / time.Microsecond)
	if t := int64(storekit.Interval(r) / time.Microsecond); t%1000 == 0 {
		nowUS -= nowUS % 1000 // the Redis stores keep the TAT as a PX expiry
	}
	q, present := sh.quotas.m[key] // an expired entry, its quota full again, is reused by a charge
	tat := max(q.tat, nowUS)
	d, newTAT := storekit.Decide(tat, nowUS, r, cost)
	sh.tick++
	switch {
	case !d.Allowed || newTAT == tat:
		if present && q.tat <= nowUS {
			sh.quotas.drop(key, q)
		} else if present {
			q.used = sh.tick
			sh.quotas.m[key] = q
		}
	case newTAT <= nowUS: // a refund filled the quota again
		sh.quotas.drop(key, q)
	case present:
		q.tat, q.used = newTAT, sh.tick
		sh.quotas.put(key, q, false)
	default:
		pol := sh.pols.id(key)
		if !sh.quotaRoom(pol, 1, now) {
			return store.Decision{}, errFull
		}
		sh.quotas.put(key, quota{tat: newTAT, used: sh.tick, pol: pol}, true)
	}
	return d, nil
}

// AllowAll decides cost against every limit at once, charging all or none
// (see store.Quota): it locks the shards of all keys, in the order of their
// index so that two calls cannot wait for each other, and decides every key
// on one clock reading. New entries that do not fit fail, writing nothing.
func (s *Store) AllowAll(ctx context.Context, limits []store.Limit, cost int) ([]store.Decision, error) {
	if err := checkLimits(ctx, limits, cost); err != nil {
		return nil, err
	}
	var shBuf [storekit.MaxLimits]*shard // checkLimits bounds the limits: all on the stack
	var gBuf [storekit.MaxLimits]gcraStep
	var sBuf [storekit.MaxLimits]strictStep // the strict limits', by the same index
	var idxBuf [storekit.MaxLimits]int
	shs, gs, ss := shBuf[:len(limits)], gBuf[:len(limits)], sBuf[:len(limits)]
	for i, l := range limits {
		shs[i] = s.shard(l.Key)
	}
	idx := s.lockAll(idxBuf[:0], shs)
	defer s.unlockAll(idx)
	now, _ := s.now(false)
	allowed := true
	for i, l := range limits {
		if l.Rate.Strict {
			ss[i].decide(shs[i], l.Key, l.Rate, cost, now)
			allowed = allowed && ss[i].d.Allowed
			continue
		}
		gs[i].decide(shs[i], l.Key, l.Rate, cost, now)
		allowed = allowed && gs[i].d.Allowed
	}
	if !allowed {
		for i, l := range limits {
			if l.Rate.Strict {
				ss[i].refuse(l.Rate)
			} else {
				gs[i].refuse(l.Rate)
			}
		}
	} else if !reserve(shs, gs, now) || !reserveLogs(shs, ss, now) {
		return nil, errFull
	}
	ds := make([]store.Decision, len(gs))
	for i, l := range limits {
		if l.Rate.Strict {
			ss[i].write(shs[i])
			ds[i] = ss[i].d
			continue
		}
		gs[i].write(shs[i])
		ds[i] = gs[i].d
	}
	return ds, nil
}

// lockAll locks each of shs once, in the order of their index in
// Store.shards, so that two calls cannot wait for each other, and returns
// the indices locked, appended to idx.
func (s *Store) lockAll(idx []int, shs []*shard) []int {
	for _, sh := range shs {
		idx = append(idx, s.index(sh))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.shards[i].mu.Lock()
	}
	return idx
}

// unlockAll unlocks the shards lockAll locked.
func (s *Store) unlockAll(idx []int) {
	for _, i := range idx {
		s.shards[i].mu.Unlock()
	}
}

// index returns the position of sh, one of s's shards, in s.shards.
func (s *Store) index(sh *shard) int {
	i := 0
	for &s.shards[i] != sh {
		i++
	}
	return i
}

// reserve makes room for the entries that gs add, each counted with the
// others of its shard and policy, and reports whether they all fit. Making
// room may remove an entry a step found: each step looks again (one found
// live and evicted is added back, a little past the bound).
func reserve(shs []*shard, gs []gcraStep, now time.Duration) bool {
	for i := range gs {
		if !gs[i].adds() {
			continue
		}
		gs[i].q.pol = shs[i].pols.id(gs[i].key)
		n := int64(0)
		for j := 0; j <= i; j++ {
			if shs[j] == shs[i] && gs[j].adds() && gs[j].q.pol == gs[i].q.pol {
				n++
			}
		}
		if !shs[i].quotaRoom(gs[i].q.pol, n, now) {
			return false
		}
	}
	for i := range gs {
		_, gs[i].present = shs[i].quotas.m[gs[i].key]
	}
	return true
}

// checkQuota returns the error of a quota call no store takes.
func checkQuota(ctx context.Context, key string, r store.Rate, cost int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: memstore: empty key", store.ErrInvalid)
	}
	if err := storekit.Check(r, cost); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	return nil
}

// checkLimits returns the error of an AllowAll call no store takes.
func checkLimits(ctx context.Context, limits []store.Limit, cost int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storekit.CheckLimits(limits, cost); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	return nil
}

// gcraStep is one key's decision, made before anything is written.
type gcraStep struct {
	key     string
	q       quota // the entry found (if present), or the one to add
	present bool
	nowUS   int64 // now in microseconds, whole milliseconds for such rates
	tat     int64 // the TAT the decision starts from
	newTAT  int64
	d       store.Decision
}

// decide decides a request of cost at now against the quota r of key, in
// sh (locked), writing nothing.
func (g *gcraStep) decide(sh *shard, key string, r store.Rate, cost int, now time.Duration) {
	g.key, g.nowUS = key, int64(now/time.Microsecond)
	if t := int64(storekit.Interval(r) / time.Microsecond); t%1000 == 0 {
		g.nowUS -= g.nowUS % 1000 // the Redis stores keep the TAT as a PX expiry
	}
	// An expired entry, its quota full again, is reused by a charge.
	g.q, g.present = sh.quotas.m[key]
	g.tat = max(g.q.tat, g.nowUS)
	g.d, g.newTAT = storekit.Decide(g.tat, g.nowUS, r, cost)
}

// adds reports whether write adds an entry, which needs room.
func (g *gcraStep) adds() bool {
	return g.d.Allowed && g.newTAT != g.tat && g.newTAT > g.nowUS && !g.present
}

// refuse turns g into a refusal of an AllowAll that another limit refused:
// nothing charged, and a RetryAfter of 0 when this limit alone allows it.
func (g *gcraStep) refuse(r store.Rate) {
	if g.d.Allowed {
		g.d, _ = storekit.Decide(g.tat, g.nowUS, r, 0)
		g.d.Allowed = false
	}
	g.newTAT = g.tat
}

// write stores g's decision in sh: the new TAT, or, when the quota is full,
// no entry; room for an added one was made.
func (g *gcraStep) write(sh *shard) {
	sh.tick++
	switch {
	case !g.d.Allowed || g.newTAT == g.tat:
		if g.present && g.q.tat <= g.nowUS {
			sh.quotas.drop(g.key, g.q)
		} else if g.present {
			g.q.used = sh.tick
			sh.quotas.m[g.key] = g.q
		}
	case g.newTAT <= g.nowUS: // a refund filled the quota again
		if g.present {
			sh.quotas.drop(g.key, g.q)
		}
	default:
		g.q.tat, g.q.used = g.newTAT, sh.tick
		sh.quotas.put(g.key, g.q, !g.present)
	}
}

// evictScan is how many quotas an eviction looks at: all of a shard that
// holds no more, so the order is exact; in a larger one, as many from a
// random place in the map (as Redis's allkeys-lru samples).
const evictScan = 64

// quotaRoom makes room for n new quotas of policy p if need be and reports
// whether they fit. Quotas are state that can be dropped: a refilled one is
// the same as none, and forgetting an old one forgives at most its debt.
// Held locks are in another table and never evicted.
func (sh *shard) quotaRoom(p uint16, n int64, now time.Duration) bool {
	t := &sh.quotas
	t.sample(now)
	for !t.fits(p, n) {
		if !sh.evictQuota(p, now) {
			return false
		}
	}
	return true
}

// evictQuota removes the refilled quotas among evictScan of the shard's,
// or, when none had refilled, the least recently decided among them of the
// policy that gives way: p itself once it has its fair share, else the
// policy with the most. It reports whether it removed any.
func (sh *shard) evictQuota(p uint16, now time.Duration) bool {
	t := &sh.quotas
	victim := p
	if t.policyUsed(p) < t.fair {
		for q, n := range t.byPolicy {
			if n > t.policyUsed(victim) {
				victim = uint16(q)
			}
		}
	}
	oldest, age, dropped, i := "", uint32(0), false, 0
	for k, q := range t.m {
		if i++; i > evictScan {
			break
		}
		switch {
		case q.expiry() <= now:
			t.drop(k, q)
			dropped = true
		case q.pol == victim && (oldest == "" || sh.tick-q.used > age):
			oldest, age = k, sh.tick-q.used
		}
	}
	if !dropped && oldest != "" {
		t.drop(oldest, t.m[oldest])
		dropped = true
	}
	return dropped
}
