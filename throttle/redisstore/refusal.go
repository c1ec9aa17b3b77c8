package redisstore

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/storekit"
)

// refusalHook tells the store of a connection its client could not make,
// as soon as the dial fails: go-redis itself dials again for a while before
// the call returns, and a store that refuses connections is down, not busy.
type refusalHook struct{ live *storekit.Liveness }

func (h refusalHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if storekit.Refusal(err) {
			h.live.Refused(err)
		}
		return c, err
	}
}

func (refusalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (refusalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hookRefusals adds s's refusalHook to client (to each node of a Cluster).
func hookRefusals(s *Store, client redis.UniversalClient) {
	h := refusalHook{s.Liveness()}
	if cc, ok := client.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(h) })
		return
	}
	client.AddHook(h)
}
