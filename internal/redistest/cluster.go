package redistest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

const (
	// clusterTimeout bounds how long StartCluster waits for the cluster to
	// form and each step of a migration.
	clusterTimeout = 20 * time.Second
	// nodeTimeout is the cluster-node-timeout of the nodes in milliseconds:
	// small, so that a killed or paused node is noticed quickly, but well
	// above the pauses of a loaded test machine.
	nodeTimeout = "1000"
	// migrateBatch is how many keys one MIGRATE moves, as redis-cli's
	// default --cluster-pipeline.
	migrateBatch = 10
)

// Cluster is a Redis Cluster of masters without replicas, owned by a test.
// Its methods fail the test on error and must be called from the test's
// goroutine.
type Cluster struct {
	// Masters are the nodes. StartCluster gives Masters[i] the slots from
	// i*16384/n to (i+1)*16384/n - 1; MigrateSlot moves single slots. Use
	// a Server's Kill, Pause and Restart as for a standalone server: a
	// restarted node comes back with its node ID and slots (its cluster
	// config file survives) but without data; WaitReady waits until it
	// serves again.
	Masters []*Server
	// Addrs are the masters' addresses, the seed list for a cluster client.
	Addrs []string

	ids     []string        // node IDs, by index in Masters
	clients []*redis.Client // one plain client per master
}

// StartCluster starts a Redis Cluster of the given number of masters (at
// least 3) and no replicas. Each node is a redis-server started as by
// Start, with cluster mode on, a cluster config file of its own in
// t.TempDir(), its cluster bus on a free port and a cluster-node-timeout of
// one second; args are appended to every node's command line. It gives each master an equal range of slots, joins them
// with CLUSTER MEET and returns once every node reports cluster_state:ok,
// which takes about two seconds: a new master waits that long before it
// declares its state ok. Cleanup stops every node.
//
// Like Start, StartCluster skips the test under go test -short.
func StartCluster(t testing.TB, masters int, args ...string) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("redistest: skipping test that needs redis-server in -short mode")
	}
	if masters < 3 {
		t.Fatalf("redistest: StartCluster(%d): a Redis Cluster needs at least 3 masters", masters)
	}
	dir := t.TempDir()
	c := &Cluster{}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	var bus0 int // the first node's cluster bus port, which the others meet
	for i := range masters {
		bus, err := freePort()
		if err != nil {
			t.Fatalf("redistest: no free port: %v", err)
		}
		srv := Start(t, append([]string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes-"+strconv.Itoa(i)+".conf"),
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-node-timeout", nodeTimeout,
		}, args...)...)
		cl := srv.Client(t)
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", srv.Addr, err)
		}
		// Distinct epochs up front, as redis-cli --cluster create sets
		// them, instead of waiting for the nodes to resolve a collision.
		lo, hi := i*ClusterSlots/masters, (i+1)*ClusterSlots/masters-1
		for _, cmd := range [][]any{
			{"CLUSTER", "SET-CONFIG-EPOCH", i + 1},
			{"CLUSTER", "ADDSLOTSRANGE", lo, hi},
		} {
			if err := cl.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("redistest: %v on %s: %v", cmd, srv.Addr, err)
			}
		}
		if i == 0 {
			bus0 = bus
		}
		c.Masters = append(c.Masters, srv)
		c.Addrs = append(c.Addrs, srv.Addr)
		c.ids = append(c.ids, id)
		c.clients = append(c.clients, cl)
	}
	// Each node meets the first; gossip introduces the others.
	host, port, _ := net.SplitHostPort(c.Addrs[0])
	for i, cl := range c.clients[1:] {
		if err := cl.Do(ctx, "CLUSTER", "MEET", host, port, bus0).Err(); err != nil {
			t.Fatalf("redistest: CLUSTER MEET on %s: %v", c.Addrs[i+1], err)
		}
	}
	c.WaitReady(t)
	return c
}

// WaitReady waits until every running master reports cluster_state:ok with
// all slots assigned and every master known, for at most 20 seconds. Call
// it after restarting or resuming a node: a restarted master refuses
// commands (CLUSTERDOWN) for about two seconds, and the others declare the
// cluster down while a master is unreachable for longer than the node
// timeout.
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	want := []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:" + strconv.Itoa(len(c.Masters))}
	for i, cl := range c.clients {
		if !c.Masters[i].Running() {
			continue
		}
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && containsAll(info, want) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("redistest: cluster not ready on %s after %v: %v; CLUSTER INFO: %q; log tail: %q",
					c.Addrs[i], clusterTimeout, err, info, tail(c.Masters[i].log))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Client returns a cluster client seeded with every master, with
// ContextTimeoutEnabled (a call ends at its context's deadline) and
// go-redis's other defaults (it follows up to 3 MOVED or ASK redirections
// or TRYAGAIN retries per command), closed at the test's cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// NodeClient returns a plain client of the master srv, for commands that
// must reach that node (CLUSTER COUNTKEYSINSLOT, INFO, DBSIZE). It is closed
// at the test's cleanup; do not close it.
func (c *Cluster) NodeClient(t testing.TB, srv *Server) *redis.Client {
	t.Helper()
	return c.clients[c.index(t, srv)]
}

// ID returns the node ID of the master srv.
func (c *Cluster) ID(t testing.TB, srv *Server) string {
	t.Helper()
	return c.ids[c.index(t, srv)]
}

func (c *Cluster) index(t testing.TB, srv *Server) int {
	t.Helper()
	for i, m := range c.Masters {
		if m == srv {
			return i
		}
	}
	addr := "<nil>"
	if srv != nil {
		addr = srv.Addr
	}
	t.Fatalf("redistest: %s is not a master of this cluster", addr)
	return -1
}

// Owner returns the master that owns slot, as the first running master
// sees it (after MigrateSlot every master agrees).
func (c *Cluster) Owner(t testing.TB, slot int) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	for i, m := range c.Masters {
		if !m.Running() {
			continue
		}
		shards, err := c.clients[i].ClusterShards(ctx).Result()
		if err != nil {
			t.Fatalf("redistest: CLUSTER SHARDS on %s: %v", m.Addr, err)
		}
		for _, sh := range shards {
			if !shardHasSlot(sh, slot) {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role != "master" {
					continue
				}
				for j, id := range c.ids {
					if id == n.ID {
						return c.Masters[j]
					}
				}
			}
		}
		t.Fatalf("redistest: slot %d has no owner in %s's view", slot, m.Addr)
	}
	t.Fatal("redistest: no master is running")
	return nil
}

// shardHasSlot reports whether slot is in one of sh's slot ranges.
func shardHasSlot(sh redis.ClusterShard, slot int) bool {
	for _, r := range sh.Slots {
		if r.Start <= int64(slot) && int64(slot) <= r.End {
			return true
		}
	}
	return false
}

// KeySlot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT
// computes it: CRC16 (XMODEM) of the hash tag, the text between the first
// '{' and the first '}' after it when that is not empty, or of the whole
// key otherwise, modulo 16384. Tests use it to pick keys that share a slot
// without a round trip per candidate.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % ClusterSlots
}

// MigrateSlot moves slot from the master from to the master to while the
// cluster serves requests, with the protocol redis-cli --cluster reshard
// uses: BeginMigration, MoveAll, Finish. It returns how many keys moved.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, from, to *Server) int {
	t.Helper()
	m := c.BeginMigration(t, slot, from, to)
	n := m.MoveAll(t)
	m.Finish(t)
	return n
}

// Migration is a slot on its way from one master to another, for tests
// that want to act between the steps of MigrateSlot. While it lasts, the
// source serves the slot's keys it still has and answers -ASK (go to the
// target) for the others; the target serves a command for the slot only
// after ASKING, and both answer -TRYAGAIN to a command on several keys of
// the slot that they hold only some of.
type Migration struct {
	c        *Cluster
	slot     int
	from, to int
}

// BeginMigration marks slot as importing on to (CLUSTER SETSLOT IMPORTING)
// and then as migrating on from (SETSLOT MIGRATING). from must own slot.
func (c *Cluster) BeginMigration(t testing.TB, slot int, from, to *Server) *Migration {
	t.Helper()
	m := &Migration{c: c, slot: slot, from: c.index(t, from), to: c.index(t, to)}
	if m.from == m.to {
		t.Fatalf("redistest: cannot migrate slot %d from %s to itself", slot, from.Addr)
	}
	if owner := c.Owner(t, slot); owner != from {
		t.Fatalf("redistest: slot %d is owned by %s, not %s", slot, owner.Addr, from.Addr)
	}
	m.setSlot(t, m.to, "IMPORTING", c.ids[m.from])
	m.setSlot(t, m.from, "MIGRATING", c.ids[m.to])
	return m
}

func (m *Migration) setSlot(t testing.TB, node int, state, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := m.c.clients[node].Do(ctx, "CLUSTER", "SETSLOT", m.slot, state, id).Err(); err != nil {
		t.Fatalf("redistest: CLUSTER SETSLOT %d %s on %s: %v", m.slot, state, m.c.Addrs[node], err)
	}
}

// Move migrates keys (which must hash to the slot) from the source to the
// target with one MIGRATE; keys the source no longer has are skipped. A
// key the target already has fails the test (BUSYKEY): the same key on two
// nodes would be a lost update.
func (m *Migration) Move(t testing.TB, keys ...string) {
	t.Helper()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	host, port, _ := net.SplitHostPort(m.c.Addrs[m.to])
	args := []any{"MIGRATE", host, port, "", 0, int64(clusterTimeout / time.Millisecond), "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	res, err := m.c.clients[m.from].Do(ctx, args...).Text()
	if err != nil || (res != "OK" && res != "NOKEY") {
		t.Fatalf("redistest: MIGRATE %d key(s) of slot %d from %s to %s: %q, %v",
			len(keys), m.slot, m.c.Addrs[m.from], m.c.Addrs[m.to], res, err)
	}
}

// MoveAll migrates every key of the slot that the source still has, in
// batches of 10 (CLUSTER GETKEYSINSLOT, then MIGRATE), and returns how many
// it moved. While the slot migrates the source creates no key in it, so
// once it lists none, all are on the target.
func (m *Migration) MoveAll(t testing.TB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	moved := 0
	for {
		keys, err := m.c.clients[m.from].ClusterGetKeysInSlot(ctx, m.slot, migrateBatch).Result()
		if err != nil {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", m.slot, m.c.Addrs[m.from], err)
		}
		if len(keys) == 0 {
			return moved
		}
		m.Move(t, keys...)
		moved += len(keys)
	}
}

// Finish assigns the slot to the target on every master (CLUSTER SETSLOT
// NODE), the target first, then the source, then the others, which also
// ends the importing and migrating states. From then on the source answers
// -MOVED for the slot. Call MoveAll first: the source refuses to give up a
// slot it still holds keys of, which fails the test.
func (m *Migration) Finish(t testing.TB) {
	t.Helper()
	order := []int{m.to, m.from}
	for i := range m.c.Masters {
		if i != m.to && i != m.from && m.c.Masters[i].Running() {
			order = append(order, i)
		}
	}
	for _, node := range order {
		m.setSlot(t, node, "NODE", m.c.ids[m.to])
	}
}

// String describes the migration for test messages.
func (m *Migration) String() string {
	return fmt.Sprintf("slot %d from %s to %s", m.slot, m.c.Addrs[m.from], m.c.Addrs[m.to])
}
