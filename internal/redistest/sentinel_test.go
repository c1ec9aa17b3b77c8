package redistest_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestSentinel drives one deployment through its whole life: it starts with
// the roles StartSentinel promises and replication working, the failover
// client writes to the master, two forced failovers swap the roles and back
// (so Failover leaves a deployment that can fail over again), a killed
// master is replaced by the replica through the sentinels alone, and the
// cleanup stops all five processes.
func TestSentinel(t *testing.T) {
	var addrs []string
	t.Run("life", func(t *testing.T) {
		d := redistest.StartSentinel(t)
		if len(d.Addrs) != 3 {
			t.Fatalf("%d sentinels, want 3", len(d.Addrs))
		}
		addrs = append(append(addrs, d.Addrs...), d.Master().Addr, d.Replica().Addr)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()

		first, second := d.Master(), d.Replica()
		checkRoles(ctx, t, first, second)
		c := d.FailoverClient(t)
		write(ctx, t, c, first, second, "k1")

		// A server outside the deployment is refused, not waited for.
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			d.WaitForMaster(ft, redistest.Start(t))
		}()
		if !ft.failed {
			t.Fatal("WaitForMaster accepted a server outside the deployment")
		}

		if got := d.Failover(t); got != second || d.Master() != second || d.Replica() != first {
			t.Fatalf("after Failover: returned %s, Master %s, Replica %s; want %s master",
				got.Addr, d.Master().Addr, d.Replica().Addr, second.Addr)
		}
		checkRoles(ctx, t, second, first)
		write(ctx, t, c, second, first, "k2")

		if got := d.Failover(t); got != first {
			t.Fatalf("second Failover promoted %s, want %s", got.Addr, first.Addr)
		}
		checkRoles(ctx, t, first, second)
		write(ctx, t, c, first, second, "k3")

		first.Kill(t)
		start := time.Now()
		d.WaitForMaster(t, second)
		t.Logf("sentinels replaced the killed master in %v", time.Since(start))
		if d.Master() != second || d.Replica() != first || first.Running() {
			t.Fatalf("after the kill: Master %s, Replica %s (running %v)", d.Master().Addr, d.Replica().Addr, first.Running())
		}
		if err := isMasterRole(ctx, t, second); err != nil {
			t.Fatal(err)
		}
		// The replica had every key written before the kill.
		for _, k := range []string{"k1", "k2", "k3"} {
			if n, err := second.Client(t).Exists(ctx, k).Result(); err != nil || n != 1 {
				t.Fatalf("EXISTS %s on the promoted replica = %d, %v", k, n, err)
			}
		}
		for {
			err := c.Set(ctx, "k4", "v", 0).Err()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("failover client never reached the new master: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n, err := second.Client(t).Exists(ctx, "k4").Result(); err != nil || n != 1 {
			t.Fatalf("the failover client's write is not on the new master: %d, %v", n, err)
		}
	})
	// Cleanup stopped every process: nothing answers any more.
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("%s still accepts connections after the test's cleanup", a)
		}
	}
}

// checkRoles fails the test unless master answers ROLE as a master and
// replica as a replica of master with its link up.
func checkRoles(ctx context.Context, t *testing.T, master, replica *redistest.Server) {
	t.Helper()
	if err := isMasterRole(ctx, t, master); err != nil {
		t.Fatal(err)
	}
	role, err := replica.Client(t).Do(ctx, "ROLE").Slice()
	if err != nil || len(role) < 5 {
		t.Fatalf("ROLE on %s: %v, %v", replica.Addr, role, err)
	}
	host, port, _ := net.SplitHostPort(master.Addr)
	if role[0] != "slave" || role[1] != host || fmt.Sprint(role[2]) != port || role[3] != "connected" {
		t.Fatalf("ROLE on %s = %v; want a connected replica of %s", replica.Addr, role, master.Addr)
	}
}

// isMasterRole returns an error unless srv answers ROLE as a master.
func isMasterRole(ctx context.Context, t *testing.T, srv *redistest.Server) error {
	role, err := srv.Client(t).Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("ROLE on %s = %v, %v; want master", srv.Addr, role, err)
	}
	return nil
}

// write sets key through the failover client and checks that it landed on
// master and reached replica.
func write(ctx context.Context, t *testing.T, c *redis.Client, master, replica *redistest.Server, key string) {
	t.Helper()
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s through the failover client: %v", key, err)
	}
	if n, err := master.Client(t).Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("%s not on the master %s: %d, %v", key, master.Addr, n, err)
	}
	rc := replica.Client(t)
	for {
		if n, err := rc.Exists(ctx, key).Result(); err == nil && n == 1 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never reached the replica %s", key, replica.Addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
