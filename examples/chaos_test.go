package examples_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
)

// chaosWindow is the examples' window in the chaos run: bursts of a user
// are spaced by more than that, so every burst finds the user's key free.
const chaosWindow = time.Second

// chaosTally counts what one fail mode did during the chaos run.
type chaosTally struct {
	bursts    int // bursts of duplicates sent
	doubles   int // bursts of which more than one copy was admitted in the window
	extra     int // admissions beyond the first, summed over those bursts
	admitted  int // copies admitted (2xx)
	rejected  int // copies turned away as duplicates (429)
	refused   int // copies refused because the store failed (503)
	errors    int // copies with a transport error or another status
	faultsRun []string
}

// TestChaos runs the four examples (net/http, gin, echo, fiber) on shared Redis
// while it fails, with many users sending bursts of concurrent duplicate
// submissions to all four processes, once per set-up: one Redis paused
// (SIGSTOP), resumed, killed and restarted empty, with each -fail mode; and
// Redlock over three independent masters, one of them paused, killed and
// restarted (after the window: a delayed restart) at a time. It counts double
// admissions (bursts of which two or more copies were admitted within the
// window) and prints the table. FailClosed must admit no duplicate: a
// request the store cannot decide is refused. Redlock with a minority down
// must admit none either: a quorum still answers, and it runs failing
// closed, so that on a machine too loaded for the quorum to answer within
// the timeout the copy is refused rather than let through. FailOpen and FailOver let
// duplicates through during the outage by design; their figures are what the
// README states.
func TestChaos(t *testing.T) {
	skipUnlessProcesses(t)
	if testing.Short() || os.Getenv("CI") == "" {
		t.Skip("the chaos run takes about a minute: it runs in CI (bash .ci/run --full, or CI=true go test -run TestChaos ./examples)")
	}
	setups := []struct {
		name     string
		mustZero bool
		run      func(t *testing.T) *chaosTally
	}{
		{"single, -fail closed", true, func(t *testing.T) *chaosTally { return chaosSingle(t, "closed") }},
		{"single, -fail open", false, func(t *testing.T) *chaosTally { return chaosSingle(t, "open") }},
		{"single, -fail over", false, func(t *testing.T) *chaosTally { return chaosSingle(t, "over") }},
		{"sentinel, -fail closed", false, func(t *testing.T) *chaosTally { return chaosSentinel(t, 0) }},
		{"sentinel + WAIT 1", false, func(t *testing.T) *chaosTally { return chaosSentinel(t, 1) }},
		{"redlock, -fail closed", true, chaosRedlock},
	}
	tallies := make([]*chaosTally, len(setups))
	for i, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			c := s.run(t)
			tallies[i] = c
			if s.mustZero && c.doubles != 0 {
				t.Errorf("%s admitted duplicates in %d of %d bursts; it must admit none", s.name, c.doubles, c.bursts)
			}
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-23s %7s %8s %6s %9s %9s %8s %7s\n", "set-up", "bursts", "doubles", "extra", "admitted", "rejected", "refused", "errors")
	for i, s := range setups {
		if c := tallies[i]; c != nil {
			fmt.Fprintf(&b, "%-23s %7d %8d %6d %9d %9d %8d %7d\n", s.name, c.bursts, c.doubles, c.extra, c.admitted, c.rejected, c.refused, c.errors)
		}
	}
	t.Log(b.String())
}

// chaosSingle runs one -fail mode against one Redis that is paused, killed
// and restarted empty.
func chaosSingle(t *testing.T, mode string) *chaosTally {
	srv := redistest.Start(t)
	return chaosRun(t, []string{"-redis", srv.Addr, "-fail", mode}, func(step stepFunc) {
		step("healthy", nil, 1500*time.Millisecond)
		step("paused", func() { srv.Pause(t) }, 1500*time.Millisecond)
		step("resumed", func() { srv.Resume(t) }, 1500*time.Millisecond)
		step("killed", func() { srv.Kill(t) }, 1500*time.Millisecond)
		step("restarted", func() { srv.Restart(t) }, 1500*time.Millisecond)
		step("paused again", func() { srv.Pause(t) }, time.Second)
		step("resumed again", func() { srv.Resume(t) }, 2*time.Second)
	})
}

// chaosSentinel runs a Sentinel group (a master, a replica, three
// sentinels) whose master is killed: the sentinels promote the replica, and
// the locks it had not received yet are gone. With replicaAck 1, a lock is
// admitted only once the replica has it (WAIT), at the price of refusing
// every lock once no replica is left.
func chaosSentinel(t *testing.T, replicaAck int) *chaosTally {
	s := redistest.StartSentinel(t)
	args := []string{"-redis-sentinel", redistest.SentinelMaster + "@" + strings.Join(s.Addrs, ","), "-fail", "closed",
		"-replica-ack", strconv.Itoa(replicaAck)}
	return chaosRun(t, args, func(step stepFunc) {
		step("healthy", nil, 2*time.Second)
		master, replica := s.Master(), s.Replica()
		step("master killed, replica promoted", func() {
			master.Kill(t)
			s.WaitForMaster(t, replica)
		}, 3*time.Second)
	})
}

// chaosRedlock runs Redlock over three masters, failing one at a time. A
// killed master comes back empty only after the window (the longest TTL),
// as the Redlock documentation asks of the operator.
func chaosRedlock(t *testing.T) *chaosTally {
	var nodes []*redistest.Server
	var addrs []string
	for range 3 {
		n := redistest.Start(t)
		nodes = append(nodes, n)
		addrs = append(addrs, n.Addr)
	}
	return chaosRun(t, []string{"-redis", strings.Join(addrs, ","), "-fail", "closed"}, func(step stepFunc) {
		step("healthy", nil, 1500*time.Millisecond)
		step("node 1 paused", func() { nodes[0].Pause(t) }, 1500*time.Millisecond)
		step("node 1 resumed", func() { nodes[0].Resume(t) }, time.Second)
		step("node 2 killed", func() { nodes[1].Kill(t) }, 1500*time.Millisecond)
		step("node 2 restarted empty", func() { nodes[1].Restart(t) }, time.Second)
		step("node 3 paused", func() { nodes[2].Pause(t) }, 1500*time.Millisecond)
		step("node 3 resumed", func() { nodes[2].Resume(t) }, 2*time.Second)
	})
}

// stepFunc runs one step of a fault schedule: f (if any), then a pause of d
// during which bursts land.
type stepFunc func(name string, f func(), d time.Duration)

// chaosRun starts the four examples with args (plus the window), has users
// send bursts while schedule runs its steps, and counts the answers.
func chaosRun(t *testing.T, args []string, schedule func(stepFunc)) *chaosTally {
	args = append(args, "-window", chaosWindow.String())
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)
	for _, a := range apps {
		healthz(t, c, a)
	}

	tally := &chaosTally{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var users sync.WaitGroup
	const nUsers, copies = 24, 6
	for u := range nUsers {
		users.Go(func() {
			// Stagger the users so that bursts land throughout the
			// schedule, not all at the same instants.
			time.Sleep(time.Duration(u) * chaosWindow / nUsers)
			for burst := 0; ; burst++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-u%d-b%d", t.Name(), u, burst)
				rs := sendBurst(c, apps, id, copies)
				mu.Lock()
				tally.add(rs)
				mu.Unlock()
				time.Sleep(chaosWindow + 300*time.Millisecond)
			}
		})
	}
	schedule(func(name string, f func(), d time.Duration) {
		if f != nil {
			f()
		}
		tally.faultsRun = append(tally.faultsRun, name)
		time.Sleep(d)
	})
	close(stop)
	users.Wait()
	for _, a := range apps {
		healthz(t, c, a)
	}
	return tally
}

// sendBurst sends copies of one submission at once, spread over the apps.
func sendBurst(c *http.Client, apps []*app, user string, copies int) []reply {
	rs := make([]reply, copies)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() {
			<-gate
			rs[i] = submit(c, apps[i%len(apps)], user)
		})
	}
	close(gate)
	wg.Wait()
	return rs
}

// add counts one burst. Copies answered after the first was sent plus the
// window may be admitted again legitimately and are not counted as doubles.
func (c *chaosTally) add(rs []reply) {
	c.bursts++
	first := rs[0].start
	for _, r := range rs {
		if r.start.Before(first) {
			first = r.start
		}
	}
	wins := 0
	for _, r := range rs {
		switch {
		case r.err != nil:
			c.errors++
		case r.status/100 == 2:
			c.admitted++
			if r.end.Before(first.Add(chaosWindow)) {
				wins++
			}
		case r.status == http.StatusTooManyRequests:
			c.rejected++
		case r.status == http.StatusServiceUnavailable:
			c.refused++
		default:
			c.errors++
		}
	}
	if wins > 1 {
		c.doubles++
		c.extra += wins - 1
	}
}
