package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/redis/go-redis/v9"
)

// startCluster starts a real three-master Redis Cluster (no replicas) and
// returns a cluster client for it.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	ctx := context.Background()
	const masters = 3
	var addrs []string
	var clients []*redis.Client
	for range masters {
		srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
		addrs = append(addrs, srv.Addr)
		clients = append(clients, srv.Client(t))
	}
	per := 16384 / masters
	for i, c := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == masters-1 {
			hi = 16383
		}
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("ADDSLOTSRANGE: %v", err)
		}
	}
	host, port, _ := net.SplitHostPort(addrs[0])
	for _, c := range clients[1:] {
		if err := c.ClusterMeet(ctx, host, port).Err(); err != nil {
			t.Fatalf("CLUSTER MEET: %v", err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range clients {
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", masters)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ready: %q, %v", info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = cc.Close() })
	// Every node must agree on the slot map before the client routes.
	for {
		err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster client: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cc
}

// TestCluster runs the store on a real Redis Cluster with keys spread over
// every node: plain, fenced and reentrant acquisitions, release, extend and
// Watch must work with a ClusterClient, which refuses scripts whose keys
// span slots.
func TestCluster(t *testing.T) {
	cc := startCluster(t)
	s := redisstore.New(cc)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()

	nodes := map[string]bool{}
	for i := range 30 {
		k := store.Key("cl", "policy", fmt.Sprint("user-", i))
		slot, err := cc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes[fmt.Sprint(slot*3/16384)] = true
		for _, req := range []store.Request{
			{Key: k, Token: store.NewToken(), TTL: time.Minute},
			{Key: k, Token: store.NewToken(), TTL: time.Minute, Fence: true},
			{Key: k, Token: store.NewToken(), TTL: time.Minute, Fence: true, Reentrant: true},
		} {
			g := mustAcquire(t, s, req)
			if req.Fence && g.Fence <= 0 {
				t.Fatalf("no fence on the cluster: %+v", g)
			}
			if g, err := s.Acquire(ctx, store.Request{Key: k, Token: "other", TTL: time.Second}); err != nil || g.Acquired {
				t.Fatalf("second acquire: %+v, %v", g, err)
			}
			mustOutcome(t, store.OK)(s.Extend(ctx, k, req.Token, time.Minute))
			mustOutcome(t, store.HeldByOther)(s.Release(ctx, k, "other"))
			mustOutcome(t, store.OK)(s.Release(ctx, k, req.Token))
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("keys landed on %d node(s); the test should spread them", len(nodes))
	}
	// A release on whichever node wakes a watcher subscribed on another.
	for i := range 3 {
		waitWatch(t, s, store.Key("cl", "watch", fmt.Sprint(i)))
	}
}
