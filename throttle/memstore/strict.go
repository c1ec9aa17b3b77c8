package memstore

import (
	"slices"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// strictLog is the log of a strict rate's key (see storekit.DecideStrict):
// one time per admitted unit of cost, in microseconds since Store.epoch,
// oldest first from buf[off]; the entries before off have left the Window
// or were refunded, and go when they outnumber the rest. Each live entry
// counts as one key against the bound of the shard's logs.
type strictLog struct {
	buf []int64
	off int
	exp time.Duration // when the newest entry leaves the Window: the log is empty then
	pol uint16
}

func (l strictLog) expiry() time.Duration { return l.exp }
func (l strictLog) policy() uint16        { return l.pol }
func (l strictLog) size() int64           { return int64(len(l.buf) - l.off) }

// allowStrict is AllowN for a strict rate (checked): one key's strictStep,
// under its shard's lock.
func (s *Store) allowStrict(key string, r store.Rate, cost int) (store.Decision, error) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now, _ := s.now(false)
	var st strictStep
	st.decide(sh, key, r, cost, now)
	if n := st.grows(); n > 0 && !sh.logs.room(sh.pols.id(key), n, now) {
		return store.Decision{}, errFull
	}
	st.write(sh)
	return st.d, nil
}

// strictStep is one strict key's decision, made before anything is
// written, as gcraStep is a smooth one's.
type strictStep struct {
	key    string
	log    strictLog // as found
	live   []int64   // its entries still in the Window
	now    int64     // µs since Store.epoch
	window int64     // µs
	cost   int       // what write logs: 0 once refused
	d      store.Decision
}

// decide decides a request of cost at now against the strict rate r of
// key, in sh (locked), writing nothing.
func (st *strictStep) decide(sh *shard, key string, r store.Rate, cost int, now time.Duration) {
	st.key, st.cost = key, cost
	st.now, st.window = int64(now/time.Microsecond), int64(r.Window/time.Microsecond)
	st.log = sh.logs.m[key]
	st.live = inWindow(st.log.buf[st.log.off:], st.now-st.window)
	st.d = storekit.DecideStrict(st.live, st.now, r, cost)
	if !st.d.Allowed {
		st.cost = 0
	}
}

// inWindow returns the entries of log, oldest first, after cut.
func inWindow(log []int64, cut int64) []int64 {
	i, _ := slices.BinarySearch(log, cut+1)
	return log[i:]
}

// refuse turns st into a refusal of an AllowAll that another limit refused:
// nothing charged, and a RetryAfter of 0 when this limit alone allows it.
func (st *strictStep) refuse(r store.Rate) {
	if st.d.Allowed {
		st.d = storekit.DecideStrict(st.live, st.now, r, 0)
		st.d.Allowed = false
	}
	st.cost = 0
}

// grows returns how many more entries write leaves than the log holds.
func (st *strictStep) grows() int64 {
	return int64(len(st.live)+max(st.cost, 0)) - st.log.size()
}

// write stores st's decision in sh: the entries that left the Window go,
// an allowed charge adds its own, a refund drops the oldest; an empty log
// is removed. Room for the growth was made.
func (st *strictStep) write(sh *shard) {
	t := &sh.logs
	l, found := t.m[st.key] // room may have dropped it, expired: then live is empty
	old := l.size()
	if !found {
		l = strictLog{pol: sh.pols.id(st.key)}
	}
	n := len(st.live)
	l.off = len(l.buf) - n
	if st.cost < 0 {
		l.off += min(-st.cost, n)
	}
	if l.off == len(l.buf) && st.cost <= 0 {
		if found {
			t.drop(st.key, t.m[st.key])
		}
		return
	}
	if 2*l.off >= len(l.buf) { // as many gone as left: drop them
		l.buf, l.off = l.buf[:copy(l.buf, l.buf[l.off:])], 0
	}
	if cap(l.buf) > 4*len(l.buf)+16 { // a long log that shrank
		l.buf = slices.Clone(l.buf)
	}
	if st.cost > 0 {
		stamp := storekit.StrictStamp(l.buf[l.off:], st.now)
		for range st.cost {
			l.buf = append(l.buf, stamp)
		}
	}
	l.exp = time.Duration(l.buf[len(l.buf)-1]+st.window) * time.Microsecond
	t.count(l.pol, l.size()-old)
	t.m[st.key] = l
	t.floor = min(t.floor, l.exp)
}

// reserveLogs makes room for the entries that the strict steps of ss add
// (the others are zero), each counted with the others of its shard and
// policy, and reports whether they all fit.
func reserveLogs(shs []*shard, ss []strictStep, now time.Duration) bool {
	for i := range ss {
		if ss[i].grows() <= 0 {
			continue
		}
		p, n := shs[i].pols.id(ss[i].key), int64(0)
		for j := 0; j <= i; j++ {
			if shs[j] == shs[i] && ss[j].grows() > 0 && shs[j].pols.id(ss[j].key) == p {
				n += ss[j].grows()
			}
		}
		if !shs[i].logs.room(p, n, now) {
			return false
		}
	}
	return true
}
