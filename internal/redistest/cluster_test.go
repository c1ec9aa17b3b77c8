package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestKeySlot checks KeySlot against values from the Redis documentation
// and the CRC16 check value; TestCluster compares it with CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":     0x31c3, // CRC16/XMODEM check value
		"somekey":       11058,
		"foo{hash_tag}": 2515,
		"bar{hash_tag}": 2515,
		"{hash_tag}":    2515,
	} {
		if got := redistest.KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if a, b := redistest.KeySlot("{user1000}.following"), redistest.KeySlot("{user1000}.followers"); a != b {
		t.Errorf("one hash tag, two slots: %d, %d", a, b)
	}
	// An empty tag does not count: the whole key is hashed.
	if redistest.KeySlot("{}a") == redistest.KeySlot("{}b") && redistest.KeySlot("{}c") == redistest.KeySlot("{}a") {
		t.Error(`"{}" was taken as a hash tag`)
	}
}

// TestCluster starts a three-master cluster and checks that it serves
// requests on every node, that KeySlot and Owner agree with the servers,
// and that a slot migration, stepwise and whole, moves keys with their
// values and TTLs while the cluster client keeps reading and writing them.
func TestCluster(t *testing.T) {
	start := time.Now()
	c := redistest.StartCluster(t, 3, "--maxmemory", "8mb")
	t.Logf("cluster ready in %v", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cc := c.Client(t)

	for _, m := range c.Masters {
		n := c.NodeClient(t, m)
		nodes, err := n.ClusterNodes(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(nodes, "master"); got != 3 || strings.Contains(nodes, "fail") ||
			strings.Contains(nodes, "handshake") || strings.Count(nodes, "connected") != 3 {
			t.Fatalf("%s: CLUSTER NODES = %q; want 3 connected masters", m.Addr, nodes)
		}
		// The extra argument reached every node.
		if cfg, _ := n.ConfigGet(ctx, "maxmemory").Result(); cfg["maxmemory"] != "8388608" {
			t.Fatalf("%s: maxmemory = %v", m.Addr, cfg)
		}
	}
	for slot, want := range map[int]int{0: 0, 5460: 0, 5461: 1, 10922: 2, 16383: 2} {
		if got := c.Owner(t, slot); got != c.Masters[want] {
			t.Fatalf("Owner(%d) = %s, want %s", slot, got.Addr, c.Masters[want].Addr)
		}
	}

	for i := range 300 {
		key := fmt.Sprintf("k%d", i)
		switch i % 3 {
		case 1:
			key = fmt.Sprintf("a{tag%d}b", i)
		case 2:
			key = fmt.Sprintf("{}{x%d}", i)
		}
		want, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := redistest.KeySlot(key); int64(got) != want {
			t.Fatalf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}

	// The client writes to every node.
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprint("spread-", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(0)
	for _, m := range c.Masters {
		n, err := c.NodeClient(t, m).DBSize(ctx).Result()
		if err != nil || n == 0 {
			t.Fatalf("%s holds %d keys (%v); the client should spread them", m.Addr, n, err)
		}
		total += n
	}
	if total != 100 {
		t.Fatalf("%d keys in the cluster, want 100", total)
	}

	t.Run("stepwise", func(t *testing.T) { testMigrationSteps(t, c, cc) })
	t.Run("whole", func(t *testing.T) { testMigrateSlot(t, c, cc) })
	t.Run("restart", func(t *testing.T) { testRestartNode(t, c, cc) })
}

// testRestartNode kills the owner of a key's slot and restarts it: it comes
// back with its node ID and slots but without the key, and serves again
// after WaitReady.
func testRestartNode(t *testing.T, c *redistest.Cluster, cc *redis.ClusterClient) {
	ctx := context.Background()
	keys, slot := slotKeys(t, cc, "restart", 1)
	owner := c.Owner(t, slot)
	id := c.ID(t, owner)

	owner.Kill(t)
	owner.Restart(t)
	c.WaitReady(t)
	if got, err := c.NodeClient(t, owner).Do(ctx, "CLUSTER", "MYID").Text(); err != nil || got != id {
		t.Fatalf("restarted node has ID %q (%v), want %q", got, err, id)
	}
	if got := c.Owner(t, slot); got != owner {
		t.Fatalf("slot %d owned by %s after the restart, want %s", slot, got.Addr, owner.Addr)
	}
	if err := cc.Get(ctx, keys[0]).Err(); err != redis.Nil {
		t.Fatalf("GET %s after the restart: %v; want redis.Nil (no persistence)", keys[0], err)
	}
	if err := cc.Set(ctx, keys[0], "again", 0).Err(); err != nil {
		t.Fatalf("SET after WaitReady: %v", err)
	}
}

// slotKeys writes n keys with the hash tag tag and returns them and their
// slot.
func slotKeys(t *testing.T, cc *redis.ClusterClient, tag string, n int) ([]string, int) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("{%s}:%d", tag, i)
		if err := cc.Set(ctx, k, "v"+k, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys, redistest.KeySlot(tag)
}

// countOn returns how many keys of slot the master m holds itself.
func countOn(t *testing.T, c *redistest.Cluster, m *redistest.Server, slot int) int64 {
	t.Helper()
	n, err := c.NodeClient(t, m).ClusterCountKeysInSlot(context.Background(), slot).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testMigrationSteps(t *testing.T, c *redistest.Cluster, cc *redis.ClusterClient) {
	ctx := context.Background()
	keys, slot := slotKeys(t, cc, "steps", 25)
	from := c.Owner(t, slot)
	to := c.Masters[0]
	if to == from {
		to = c.Masters[1]
	}

	m := c.BeginMigration(t, slot, from, to)
	m.Move(t, keys[0])
	if got := countOn(t, c, to, slot); got != 1 {
		t.Fatalf("%v: target holds %d keys after moving one", m, got)
	}
	// The client reads the moved key through ASK and the others on the
	// source; a new key goes to the target.
	for _, k := range keys[:2] {
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != "v"+k {
			t.Fatalf("GET %s mid-migration: %q, %v", k, v, err)
		}
	}
	if err := cc.Set(ctx, "{steps}:new", "vnew", time.Hour).Err(); err != nil {
		t.Fatalf("SET mid-migration: %v", err)
	}
	if got := countOn(t, c, to, slot); got != 2 {
		t.Fatalf("target holds %d keys after a SET mid-migration, want 2", got)
	}
	// A command on two keys the source holds only one of is refused
	// until the migration ends.
	if err := cc.MGet(ctx, keys[0], keys[1]).Err(); !redis.IsTryAgainError(err) {
		t.Fatalf("MGET of a moved and an unmoved key mid-migration: %v; want TRYAGAIN", err)
	}

	if n := m.MoveAll(t); n != len(keys)-1 {
		t.Fatalf("MoveAll moved %d keys, want %d", n, len(keys)-1)
	}
	m.Finish(t)
	checkOwned(t, c, slot, to, keys[1])
	if got, want := countOn(t, c, to, slot), int64(len(keys)+1); got != want {
		t.Fatalf("target holds %d keys of the slot, want %d", got, want)
	}
	if got := countOn(t, c, from, slot); got != 0 {
		t.Fatalf("source still holds %d keys of the slot", got)
	}
	want := map[string]string{"{steps}:new": "vnew"}
	for _, k := range keys {
		want[k] = "v" + k
	}
	for k, w := range want {
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != w {
			t.Fatalf("GET %s after the migration: %q, %v; want %q", k, v, err, w)
		}
		if ttl, err := cc.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Fatalf("PTTL %s after the migration: %v, %v; the TTL must move with the key", k, ttl, err)
		}
	}
}

func testMigrateSlot(t *testing.T, c *redistest.Cluster, cc *redis.ClusterClient) {
	ctx := context.Background()
	keys, slot := slotKeys(t, cc, "whole", 37)
	from := c.Owner(t, slot)
	for _, to := range c.Masters {
		if to == from {
			continue
		}
		if n := c.MigrateSlot(t, slot, from, to); n != len(keys) {
			t.Fatalf("MigrateSlot moved %d keys, want %d", n, len(keys))
		}
		checkOwned(t, c, slot, to, keys[0])
		for _, k := range keys {
			if v, err := cc.Get(ctx, k).Result(); err != nil || v != "v"+k {
				t.Fatalf("GET %s after moving to %s: %q, %v", k, to.Addr, v, err)
			}
		}
		from = to
	}
}

// checkOwned checks that every master agrees that to owns slot: to serves
// key, the others redirect to it with MOVED.
func checkOwned(t *testing.T, c *redistest.Cluster, slot int, to *redistest.Server, key string) {
	t.Helper()
	if got := c.Owner(t, slot); got != to {
		t.Fatalf("Owner(%d) = %s, want %s", slot, got.Addr, to.Addr)
	}
	for _, m := range c.Masters {
		err := c.NodeClient(t, m).Get(context.Background(), key).Err()
		if m == to {
			if err != nil {
				t.Fatalf("owner %s: GET %s: %v", m.Addr, key, err)
			}
			continue
		}
		var rerr redis.Error
		if want := fmt.Sprintf("MOVED %d %s", slot, to.Addr); !errors.As(err, &rerr) || rerr.Error() != want {
			t.Fatalf("%s: GET %s: %v; want %q", m.Addr, key, err, want)
		}
	}
}
