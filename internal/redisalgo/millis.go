package redisalgo

import (
	"strconv"
	"sync/atomic"
)

// Millis keeps the decimal text of the TTLs, in milliseconds, that a store
// sent lately, a few by their low bits: a policy sends one TTL on every
// call, and formatting it, or boxing it as a go-redis argument, would cost
// an allocation per call.
type Millis [8]atomic.Pointer[msText]

type msText struct {
	ms   int64
	text string
	arg  any // text, boxed
}

func (m *Millis) get(ms int64) *msText {
	p := &m[ms&7]
	if v := p.Load(); v != nil && v.ms == ms {
		return v
	}
	v := &msText{ms: ms, text: strconv.FormatInt(ms, 10)}
	v.arg = v.text
	p.Store(v)
	return v
}

// Text returns ms in decimal.
func (m *Millis) Text(ms int64) string { return m.get(ms).text }

// Arg returns ms in decimal as a command argument.
func (m *Millis) Arg(ms int64) any { return m.get(ms).arg }

// One returns the one-integer script reply v as a slice, without an
// allocation when v is small (the scripts' outcomes). Conn.Eval's callers
// only read its replies.
func One(v int64) []int64 {
	if v >= 0 && v < int64(len(small)) {
		return small[v : v+1 : v+1]
	}
	return []int64{v}
}

var small = [...]int64{0, 1, 2, 3, 4, 5, 6, 7}
