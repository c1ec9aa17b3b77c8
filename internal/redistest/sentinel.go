package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinels of StartSentinel monitor,
// for redis.FailoverOptions.MasterName.
const SentinelMaster = "mymaster"

const (
	// sentinelDownAfter is the sentinels' down-after-milliseconds: a master
	// silent this long is subjectively down. Small, so that a killed master
	// is replaced within seconds.
	sentinelDownAfter = 500 * time.Millisecond
	// sentinelFailoverTimeout is the sentinels' failover-timeout: how long
	// a failover may take before it is abandoned, and half the pause before
	// a sentinel that lost an election tries again.
	sentinelFailoverTimeout = 2 * time.Second
	// settleTimeout bounds how long StartSentinel, Failover and
	// WaitForMaster wait for the deployment to reach the state they promise.
	settleTimeout = 30 * time.Second
)

// Sentinel is a Redis Sentinel deployment of a test: two data nodes, one
// master and one replica, and three sentinels monitoring them as
// SentinelMaster with a quorum of two. Every process binds 127.0.0.1 on a
// free port, keeps its files in the test's temporary directory and is
// stopped at the test's cleanup. Its methods are safe for concurrent use.
type Sentinel struct {
	// Addrs are the three sentinels' "127.0.0.1:port" addresses, for
	// redis.FailoverOptions.SentinelAddrs.
	Addrs []string

	nodes [2]*Server
	procs []*process // the sentinels, for cleanup
	logs  []string   // the sentinels' log files, for failure messages

	mu     sync.Mutex
	master int // index in nodes of the master the sentinels last agreed on
}

// StartSentinel starts a master, a replica of it (--replicaof) and three
// sentinels (redis-server sentinel.conf --sentinel) that monitor the master
// with down-after-milliseconds 500 and failover-timeout 2000, so that a
// failover completes within a few seconds. It returns once the replica is in
// sync and every sentinel reports the master, knows the replica, and knows
// the two other sentinels (SENTINEL CKQUORUM finds three usable sentinels):
// from then on a failover can be forced or happen by itself. That takes two
// to three seconds, mostly for the sentinels to discover each other.
//
// The data nodes are started by Start (no persistence) with
// repl-diskless-sync-delay 0, so that a replica syncs at once.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	nodeArgs := []string{"--repl-diskless-sync-delay", "0"}
	master := Start(t, nodeArgs...)
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := Start(t, append(nodeArgs, "--replicaof", host, port)...)
	s := &Sentinel{nodes: [2]*Server{master, replica}}
	// Stop the sentinels first (cleanups run in reverse), so that they do
	// not fail over while the data nodes stop.
	t.Cleanup(s.stopSentinels)

	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := waitInSync(ctx, master, replica); err != nil {
		t.Fatalf("redistest: replica %s never synced with %s: %v", replica.Addr, master.Addr, err)
	}
	dir := t.TempDir()
	for i := range 3 {
		if err := s.startSentinel(filepath.Join(dir, "sentinel"+strconv.Itoa(i)), master.Addr); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
	if err := s.waitAgreed(ctx, master, replica); err != nil {
		t.Fatalf("redistest: sentinels not ready: %v; sentinel log tail: %q", err, tail(s.logs[0]))
	}
	return s
}

// FailoverClient returns a go-redis Sentinel failover client
// (redis.NewFailoverClient) for the deployment, closed at the test's
// cleanup. It asks the sentinels for the master and follows failovers.
// Like Server.Client, it ends calls at their context's deadline
// (ContextTimeoutEnabled).
func (s *Sentinel) FailoverClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            SentinelMaster,
		SentinelAddrs:         s.Addrs,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Master returns the data node that the sentinels agreed on as master at
// StartSentinel or at the last Failover or WaitForMaster. After the master
// was killed and before WaitForMaster, it is still the dead node.
func (s *Sentinel) Master() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[s.master]
}

// Replica returns the other data node: the replica, or after a failover
// the former master (not running if it was killed).
func (s *Sentinel) Replica() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[1-s.master]
}

// Failover forces a failover with SENTINEL FAILOVER mymaster, which
// promotes the replica without waiting for the master to fail, and returns
// the new master once every sentinel reports it and it answers as a master
// (see WaitForMaster). The former master is then made a replica of the new
// one and Failover waits until it is in sync, so that the deployment can
// fail over again. (Sentinels demote a former master that is still up by
// themselves, but only about ten seconds later; Failover sends the same
// REPLICAOF at once.) Right after a failover the sentinels refuse another
// one for a moment (NOGOODSLAVE until they have had the former master's
// INFO, INPROG while the last one ends); Failover retries then. It fails the
// test when the replica is not running or the sentinels still refuse after
// 30 seconds.
func (s *Sentinel) Failover(t testing.TB) *Server {
	t.Helper()
	oldMaster, promoted := s.Master(), s.Replica()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if !promoted.Running() {
		t.Fatalf("redistest: Failover: the replica %s is not running", promoted.Addr)
	}
	err := poll(ctx, func() error {
		err := s.sentinelDo(ctx, 0, "SENTINEL", "FAILOVER", SentinelMaster).Err()
		if err != nil && !redis.HasErrorPrefix(err, "NOGOODSLAVE") && !redis.HasErrorPrefix(err, "INPROG") {
			return permanent{err}
		}
		return err
	})
	if err != nil {
		t.Fatalf("redistest: SENTINEL FAILOVER: %v; sentinel log tail: %q", err, tail(s.logs[0]))
	}
	s.WaitForMaster(t, promoted)
	if !oldMaster.Running() {
		return promoted
	}
	host, port, _ := net.SplitHostPort(promoted.Addr)
	if err := nodeDo(ctx, oldMaster, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatalf("redistest: REPLICAOF on the former master %s: %v", oldMaster.Addr, err)
	}
	if err := waitInSync(ctx, promoted, oldMaster); err != nil {
		t.Fatalf("redistest: former master %s never synced with %s: %v", oldMaster.Addr, promoted.Addr, err)
	}
	return promoted
}

// WaitForMaster waits until every sentinel reports srv, one of the
// deployment's data nodes, as the master and srv answers ROLE as a master,
// and records it as Master. Use it after killing or pausing the master, to
// wait for the sentinels to promote the replica by themselves; it fails the
// test if that takes longer than 30 seconds.
func (s *Sentinel) WaitForMaster(t testing.TB, srv *Server) {
	t.Helper()
	idx := -1
	for i, n := range s.nodes {
		if n == srv {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("redistest: WaitForMaster: %s is not a node of this deployment", srv.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	err := poll(ctx, func() error {
		for i := range s.Addrs {
			addr, err := s.sentinelDo(ctx, i, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster).StringSlice()
			if err != nil {
				return fmt.Errorf("sentinel %s: %w", s.Addrs[i], err)
			}
			if len(addr) != 2 || net.JoinHostPort(addr[0], addr[1]) != srv.Addr {
				return fmt.Errorf("sentinel %s reports master %v", s.Addrs[i], addr)
			}
		}
		return isMaster(ctx, srv)
	})
	if err != nil {
		t.Fatalf("redistest: %s never became the agreed master: %v; sentinel log tail: %q", srv.Addr, err, tail(s.logs[0]))
	}
	s.mu.Lock()
	s.master = idx
	s.mu.Unlock()
}

// startSentinel writes a sentinel configuration in dir and runs a sentinel
// with it on a free port, retrying with another port when the one picked
// was taken meanwhile.
func (s *Sentinel) startSentinel(dir, masterAddr string) error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return errors.New(NotFound)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	host, mport, _ := net.SplitHostPort(masterAddr)
	conf := filepath.Join(dir, "sentinel.conf")
	logf := filepath.Join(dir, "sentinel.log")
	var lastErr error
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("no free port: %w", err)
		}
		// The sentinel rewrites this file as it learns; a fresh copy for
		// each attempt. Every address is a loopback IP, so neither
		// resolve-hostnames nor announce-ip is needed: a sentinel announces
		// the address its connection to the master comes from, 127.0.0.1.
		text := strings.Join([]string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + dir,
			"logfile " + logf,
			fmt.Sprintf("sentinel monitor %s %s %s 2", SentinelMaster, host, mport),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, sentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, sentinelFailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p := &process{cmd: exec.Command(bin, conf, "--sentinel"), done: make(chan struct{})}
		p.cmd.Stderr = &p.stderr
		p.cmd.Stdout = &p.stderr
		setDeathSignal(p.cmd)
		if err := p.cmd.Start(); err != nil {
			return fmt.Errorf("start sentinel: %w", err)
		}
		go func() {
			_ = p.cmd.Wait()
			close(p.done)
		}()
		if lastErr = waitPing(addr, p.done); lastErr == nil {
			s.mu.Lock()
			s.procs = append(s.procs, p)
			s.Addrs = append(s.Addrs, addr)
			s.logs = append(s.logs, logf)
			s.mu.Unlock()
			return nil
		}
		p.signal(syscall.SIGKILL)
		<-p.done
		lastErr = fmt.Errorf("sentinel on %s: %w; stderr: %q; log tail: %q", addr, lastErr, p.stderr.String(), tail(logf))
	}
	return lastErr
}

// stopSentinels stops every sentinel (SIGTERM, then SIGKILL after
// stopTimeout) and waits for them to exit.
func (s *Sentinel) stopSentinels() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			p.signal(syscall.SIGKILL)
			<-p.done
		}
	}
}

// waitAgreed waits until every sentinel reports master, sees replica as a
// replica with its link up, and finds three usable sentinels.
func (s *Sentinel) waitAgreed(ctx context.Context, master, replica *Server) error {
	return poll(ctx, func() error {
		for i, sa := range s.Addrs {
			addr, err := s.sentinelDo(ctx, i, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster).StringSlice()
			if err != nil {
				return fmt.Errorf("sentinel %s: %w", sa, err)
			}
			if len(addr) != 2 || net.JoinHostPort(addr[0], addr[1]) != master.Addr {
				return fmt.Errorf("sentinel %s reports master %v, want %s", sa, addr, master.Addr)
			}
			reps, err := s.sentinelDo(ctx, i, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
			if err != nil {
				return fmt.Errorf("sentinel %s: SENTINEL REPLICAS: %w", sa, err)
			}
			if !replicaUp(reps, replica.Addr) {
				return fmt.Errorf("sentinel %s does not see replica %s up: %v", sa, replica.Addr, reps)
			}
			q, err := s.sentinelDo(ctx, i, "SENTINEL", "CKQUORUM", SentinelMaster).Text()
			if err != nil || !strings.HasPrefix(q, "OK 3 usable") {
				return fmt.Errorf("sentinel %s: CKQUORUM %q, %v", sa, q, err)
			}
		}
		return nil
	})
}

// replicaUp reports whether a SENTINEL REPLICAS reply lists addr as a
// replica that is neither down nor disconnected, with its master link up.
func replicaUp(reply []any, addr string) bool {
	for _, r := range reply {
		f := fields(r)
		if net.JoinHostPort(f["ip"], f["port"]) != addr {
			continue
		}
		return f["flags"] == "slave" && f["master-link-status"] == "ok"
	}
	return false
}

// fields turns one entry of a SENTINEL REPLICAS reply (a flat list of
// names and values under RESP2, a map under RESP3) into a map.
func fields(entry any) map[string]string {
	m := make(map[string]string)
	switch e := entry.(type) {
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			m[fmt.Sprint(e[i])] = fmt.Sprint(e[i+1])
		}
	case map[any]any:
		for k, v := range e {
			m[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	case map[string]any:
		for k, v := range e {
			m[k] = fmt.Sprint(v)
		}
	}
	return m
}

// sentinelDo sends one command to the i-th sentinel on a connection of its
// own, so that no client outlives the call.
func (s *Sentinel) sentinelDo(ctx context.Context, i int, args ...any) *redis.Cmd {
	s.mu.Lock()
	addr := s.Addrs[i]
	s.mu.Unlock()
	return do(ctx, addr, args...)
}

// nodeDo sends one command to a data node on a connection of its own.
func nodeDo(ctx context.Context, srv *Server, args ...any) *redis.Cmd {
	return do(ctx, srv.Addr, args...)
}

func do(ctx context.Context, addr string, args ...any) *redis.Cmd {
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		DialTimeout:           time.Second,
		ContextTimeoutEnabled: true,
		PoolSize:              1,
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Do(ctx, args...)
}

// WaitInSync waits until replica reports its replication link to master up,
// master lists replica as an online replica, and a write made on master
// has reached replica: replica has loaded master's data set and receives
// its writes as they happen, so that WAIT is answered at once. After a
// full sync that takes up to a second more (the master starts streaming
// at the replica's first acknowledgement). It fails the test after 30
// seconds. StartSentinel and Failover call it; a test
// that starts a replica of its own (Start with "--replicaof", host, port)
// or lets one reconnect (after Resume) can too.
func WaitInSync(t testing.TB, master, replica *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := waitInSync(ctx, master, replica); err != nil {
		t.Fatalf("redistest: %s is not an in-sync replica of %s: %v", replica.Addr, master.Addr, err)
	}
}

// waitInSync is WaitInSync bounded by ctx.
func waitInSync(ctx context.Context, master, replica *Server) error {
	_, rport, _ := net.SplitHostPort(replica.Addr)
	err := poll(ctx, func() error {
		info, err := nodeDo(ctx, replica, "INFO", "replication").Text()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica: %q", info)
		}
		info, err = nodeDo(ctx, master, "INFO", "replication").Text()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "port="+rport+",state=online") {
			return fmt.Errorf("master: %q", info)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Online is not enough: after a diskless sync the master holds back
	// its stream of writes until the replica's first REPLCONF ACK, which
	// can take a second, and WAIT times out meanwhile. Write something
	// (PUBLISH is replicated and touches no key) and wait until the
	// replica has it.
	if err := nodeDo(ctx, master, "PUBLISH", "__redistest__:sync", "1").Err(); err != nil {
		return err
	}
	want, err := infoInt(ctx, master, "master_repl_offset")
	if err != nil {
		return err
	}
	return poll(ctx, func() error {
		got, err := infoInt(ctx, replica, "slave_repl_offset")
		if err == nil && got < want {
			err = fmt.Errorf("replica at replication offset %d, master at %d", got, want)
		}
		return err
	})
}

// infoInt returns the integer field of INFO replication on srv.
func infoInt(ctx context.Context, srv *Server, field string) (int64, error) {
	info, err := nodeDo(ctx, srv, "INFO", "replication").Text()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO replication of %s", field, srv.Addr)
}

// isMaster reports, as a nil error, that srv answers ROLE as a master.
func isMaster(ctx context.Context, srv *Server) error {
	role, err := nodeDo(ctx, srv, "ROLE").Slice()
	if err != nil {
		return fmt.Errorf("ROLE on %s: %w", srv.Addr, err)
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("ROLE on %s: %v", srv.Addr, role)
	}
	return nil
}

// poll calls check every 20 ms until it returns nil or a permanent error,
// or ctx ends, and then returns check's last error.
func poll(ctx context.Context, check func() error) error {
	for {
		err := check()
		if p, ok := err.(permanent); ok {
			return p.error
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// permanent is an error that stops poll at once.
type permanent struct{ error }
