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
