package memstore

import "strings"

// Policies: how one store serves many policies fairly. Every entry (a lock,
// a quota, a record) belongs to the policy named in its key's hash tag,
// <prefix>:{<policy>:<id>} (see store.Key); a key without one belongs to
// the policy "". A shard counts its entries per policy, and a policy that
// holds its share of a bound (WithPolicyShare, half by default) is refused
// a new entry (ErrFull) while the shard still has room for the others: a
// flood of new keys on one policy fills that policy's share, never the
// store, and the other policies answer as before. Nothing live is evicted
// to make room, so the flooded policy's own answers stay right too: its
// held keys stay held.
//
// Fence counters are not counted per policy: a counter can always go (see
// shard.nextFence), so they never make a store refuse anything.

// maxPolicies is how many distinct policies a shard tells apart; the keys
// of any further ones count as the policy "" (ids are uint16, and a store
// used with keys of another shape must not grow a table per key).
const maxPolicies = 1 << 10

// policyOf returns the policy part of key's hash tag: what lies between the
// first '{' and the next ':' (store.Key escapes both in a policy name and an
// identity, and a prefix has no '{'), or "" when key has no such tag.
func policyOf(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return ""
	}
	rest := key[i+1:]
	j := strings.IndexByte(rest, ':')
	if j < 0 || strings.IndexByte(rest[:j], '}') >= 0 {
		return ""
	}
	return rest[:j]
}

// policies gives the policies of a shard's keys small ids (0 is "").
type policies struct {
	ids    map[string]uint16
	last   string // the policy looked up last, and its id: most keys in a
	lastID uint16 // row are of one policy, spared a map look-up
}

// id returns the id of key's policy.
func (p *policies) id(key string) uint16 {
	name := policyOf(key)
	if name == p.last {
		return p.lastID
	}
	if name == "" {
		return 0
	}
	id, ok := p.ids[name]
	if !ok {
		if len(p.ids) >= maxPolicies-1 {
			return 0
		}
		if p.ids == nil {
			p.ids = make(map[string]uint16)
		}
		name = strings.Clone(name) // not the whole key kept alive
		id = uint16(len(p.ids) + 1)
		p.ids[name] = id
	}
	p.last, p.lastID = name, id
	return id
}

// perPolicy counts entries (or bytes) by policy id.
type perPolicy []int64

func (c perPolicy) get(id uint16) int64 {
	if int(id) < len(c) {
		return c[id]
	}
	return 0
}

func (c *perPolicy) add(id uint16, d int64) {
	if int(id) >= len(*c) {
		*c = append(*c, make([]int64, int(id)+1-len(*c))...)
	}
	(*c)[id] += d
}

// share returns a policy's part of a bound n: share of it, at least one.
func share(n int64, share float64) int64 {
	if share >= 1 {
		return n
	}
	return max(int64(float64(n)*share), 1)
}
