package grpcadapter

import (
	"hash/maphash"

	"google.golang.org/grpc/metadata"

	"github.com/go-throttle/throttle/throttle/flow"
)

// limitsMD is the header metadata of lim: ratelimit-policy and ratelimit,
// with the values of the HTTP fields; nil when it has neither. The map is
// shared by every call with the same values (headers), so that a call
// allocates none: grpc-go's transport and the Replay recorder copy what
// SetHeader gives them, and a ServerTransportStream of your own (a test's)
// must not change it either.
func limitsMD(lim *flow.Limits) metadata.MD { return fieldsMD(lim.Fields()) }

// fieldsMD is the header metadata of the fields' values policy and limit.
func fieldsMD(policy, limit []string) metadata.MD {
	p, okP := oneValue(policy)
	l, okL := oneValue(limit)
	if !okP || !okL {
		return newMD(policy, limit)
	}
	k := mdKey{p, l}
	if k == (mdKey{}) {
		return nil
	}
	return headers.get(k.hash(), k, func(k mdKey) metadata.MD {
		var policy, limit []string
		if k.policy != "" {
			policy = []string{k.policy}
		}
		if k.limit != "" {
			limit = []string{k.limit}
		}
		return newMD(policy, limit)
	})
}

// mdKey is the header metadata's values: "" for a field not sent.
type mdKey struct{ policy, limit string }

// oneValue is the value of a field's values, "" when there are none, and
// whether it stands for them: not when there are two, or one "".
func oneValue(vals []string) (string, bool) {
	if len(vals) == 0 {
		return "", true
	}
	return vals[0], len(vals) == 1 && vals[0] != ""
}

func (k *mdKey) hash() uint64 {
	return mix(maphash.String(seed, k.policy)*31 + maphash.String(seed, k.limit))
}

// headers are the header metadata of the calls, by their values.
var headers cache[mdKey, metadata.MD]

// newMD is a new map of the header metadata policy and limit.
func newMD(policy, limit []string) metadata.MD {
	md := make(metadata.MD, 2)
	if policy != nil {
		md["ratelimit-policy"] = policy
	}
	if limit != nil {
		md["ratelimit"] = limit
	}
	return md
}
